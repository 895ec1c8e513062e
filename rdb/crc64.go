package rdb

// Redis checksums an RDB file with CRC-64/Jones: polynomial
// 0xad93d23594c935a9, input and output reflected, initial value 0 and no
// final xor, so crc64("123456789") is 0xe9c6d914c4b8d9ca. hash/crc64
// inverts the value before and after each update, and for a table of its
// own it builds the slicing tables again (16 KiB) on every call of 2 KiB or
// more, which would allocate per large value; so the table is ours.

// jonesReflected is the Jones polynomial with its bits reversed, the form
// a reflected (least significant bit first) table is built from.
const jonesReflected = 0x95ac9329ac4bc9b5

// crcTable[0] is the byte-at-a-time table; crcTable[k][b] is the CRC of
// byte b followed by k zero bytes, which lets crc64Update fold eight bytes
// per step (slicing-by-8).
var crcTable = makeCRCTable()

func makeCRCTable() *[8][256]uint64 {
	t := new([8][256]uint64)
	for i := range 256 {
		c := uint64(i)
		for range 8 {
			if c&1 == 1 {
				c = c>>1 ^ jonesReflected
			} else {
				c >>= 1
			}
		}
		t[0][i] = c
	}
	for i := range 256 {
		c := t[0][i]
		for k := 1; k < 8; k++ {
			c = t[0][byte(c)] ^ c>>8
			t[k][i] = c
		}
	}
	return t
}

// crc64Update returns the Redis CRC-64 of the bytes whose CRC is crc
// followed by p: crc64Update(crc64Update(0, a), b) is the CRC of a then b.
func crc64Update(crc uint64, p []byte) uint64 {
	t := crcTable
	for len(p) >= 8 {
		crc ^= uint64(p[0]) | uint64(p[1])<<8 | uint64(p[2])<<16 | uint64(p[3])<<24 |
			uint64(p[4])<<32 | uint64(p[5])<<40 | uint64(p[6])<<48 | uint64(p[7])<<56
		crc = t[7][byte(crc)] ^ t[6][byte(crc>>8)] ^ t[5][byte(crc>>16)] ^ t[4][byte(crc>>24)] ^
			t[3][byte(crc>>32)] ^ t[2][byte(crc>>40)] ^ t[1][byte(crc>>48)] ^ t[0][byte(crc>>56)]
		p = p[8:]
	}
	for _, b := range p {
		crc = t[0][byte(crc)^b] ^ crc>>8
	}
	return crc
}

// crc64Byte is crc64Update for one byte, for the reader's byte-at-a-time
// path.
func crc64Byte(crc uint64, b byte) uint64 {
	return crcTable[0][byte(crc)^b] ^ crc>>8
}
