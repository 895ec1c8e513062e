package rdb

import (
	"hash/crc64"
	"math/rand/v2"
	"testing"
)

func TestCRC64CheckValue(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
	}{
		{"", 0},
		{"123456789", 0xe9c6d914c4b8d9ca},
	} {
		if got := crc64Update(0, []byte(tc.in)); got != tc.want {
			t.Errorf("crc64(%q) = %#x want %#x", tc.in, got, tc.want)
		}
	}
}

// hash/crc64 with the same reflected polynomial computes the same CRC once
// its inversions are undone: ^Update(^crc, ...) is the uninverted update.
// It is an independent oracle for the slicing-by-8 path and its tail.
func TestCRC64AgreesWithHashCRC64(t *testing.T) {
	table := crc64.MakeTable(jonesReflected)
	if got := ^crc64.Update(^uint64(0), table, []byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Fatalf("hash/crc64 compensated = %#x want 0xe9c6d914c4b8d9ca", got)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 300 {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		want := ^crc64.Update(^uint64(0), table, p)
		if got := crc64Update(0, p); got != want {
			t.Fatalf("len %d: crc64Update = %#x, hash/crc64 %#x", n, got, want)
		}
		cut := rng.IntN(n + 1)
		if got := crc64Update(crc64Update(0, p[:cut]), p[cut:]); got != want {
			t.Fatalf("len %d cut at %d: %#x want %#x", n, cut, got, want)
		}
		var bytewise uint64
		for _, b := range p {
			bytewise = crc64Byte(bytewise, b)
		}
		if bytewise != want {
			t.Fatalf("len %d: crc64Byte over each byte = %#x want %#x", n, bytewise, want)
		}
	}
}
