package rdb

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

// shown is an Entry as a test prints and compares it.
type shown struct {
	Key, Value string
	ExpireAtMs int64
}

func show(es []Entry) []shown {
	out := make([]shown, len(es))
	for i, e := range es {
		out[i] = shown{string(e.Key), string(e.Value), e.ExpireAtMs}
	}
	return out
}

func entries(ss ...shown) []Entry {
	out := make([]Entry, len(ss))
	for i, s := range ss {
		out[i] = Entry{[]byte(s.Key), []byte(s.Value), s.ExpireAtMs}
	}
	return out
}

// writeFile writes es with a Writer and returns the file.
func writeFile(t testing.TB, aux []Aux, es []Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	expires := 0
	for _, e := range es {
		if e.ExpireAtMs != 0 {
			expires++
		}
	}
	w, err := NewWriter(&buf, aux, len(es), expires)
	require.NoError(t, err)
	for _, e := range es {
		require.NoError(t, w.Write(e))
	}
	require.NoError(t, w.Close())
	return buf.Bytes()
}

// readAll reads the file from src to its end. err is nil when Next ended
// with io.EOF; es holds the keys read before whatever ended it.
func readAll(src io.Reader, opts ReaderOptions) (es []Entry, aux []Aux, err error) {
	r, err := NewReader(src, opts)
	if err != nil {
		return nil, nil, err
	}
	for {
		e, err := r.Next()
		if err == io.EOF {
			return es, r.Aux(), nil
		}
		if err != nil {
			return es, r.Aux(), err
		}
		es = append(es, e)
	}
}

// rdbFile is a file of the given version with body between the header and
// the EOF opcode, and the checksum from version 5 on.
func rdbFile(version int, body ...[]byte) []byte {
	b := cat(append([][]byte{fmt.Appendf(nil, "REDIS%04d", version)}, body...)...)
	b = append(b, opEOF)
	if version >= 5 {
		b = withCRC(b)
	}
	return b
}

// str is a string with a 6-bit length.
func str(s string) []byte {
	if len(s) >= 1<<6 {
		panic("str: too long for a 6-bit length: " + s)
	}
	return append([]byte{byte(len(s))}, s...)
}

var roundTripAux = []Aux{
	{"redis-ver", "7.0.15"},
	{"redis-bits", "64"},
	{"ctime", "1700000000"},
	{"used-mem", "1048576"},
	{"repl-id", strings.Repeat("ab", 20)},
	{"repl-offset", "12345"},
	{"aof-base", "0"},
}

func roundTripEntries() []Entry {
	big := make([]byte, 100_000)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	es := entries(
		shown{"plain", "value", 0},
		shown{"expiring", "in an hour", 1700000000000 + 3600_000},
		shown{"empty value", "", 0},
		shown{"", "empty key", 0},
		shown{"bin\r\n\x00key", "\x00\r\n\xff\x00", 1700000000001},
		shown{"12345", "-7", 0},
		shown{"long ago", "x", -5},
		shown{strings.Repeat("k", 70), strings.Repeat("v", 20000), 0},
	)
	return append(es, Entry{Key: []byte("big"), Value: big, ExpireAtMs: 1 << 62})
}

func TestRoundTrip(t *testing.T) {
	want := roundTripEntries()
	data := writeFile(t, roundTripAux, want)

	r, err := NewReader(bytes.NewReader(data), ReaderOptions{})
	require.NoError(t, err)
	require.Equal(t, WriteVersion, r.Version())
	got, aux, err := readAll(bytes.NewReader(data), ReaderOptions{})
	require.NoError(t, err)
	require.Equal(t, show(want), show(got))
	require.Equal(t, roundTripAux, aux)
}

// Without an io.ByteReader the Reader buffers its input, and reads the
// same file through readers that return a byte or half a request at a time.
func TestRoundTripThroughOtherReaders(t *testing.T) {
	want := roundTripEntries()
	data := writeFile(t, roundTripAux, want)
	for name, src := range map[string]io.Reader{
		"one byte":  iotest.OneByteReader(bytes.NewReader(data)),
		"half":      iotest.HalfReader(bytes.NewReader(data)),
		"data, err": iotest.DataErrReader(bytes.NewReader(data)),
	} {
		got, aux, err := readAll(src, ReaderOptions{})
		require.NoError(t, err, name)
		require.Equal(t, show(want), show(got), name)
		require.Equal(t, roundTripAux, aux, name)
	}
}

// On a replication connection the commands follow the snapshot: a Reader
// over a *bufio.Reader must leave them there.
func TestReaderLeavesWhatFollowsTheFile(t *testing.T) {
	data := writeFile(t, nil, entries(shown{"k", "v", 0}))
	const next = "*1\r\n$4\r\nPING\r\n"
	br := bufio.NewReader(strings.NewReader(string(data) + next))
	got, _, err := readAll(br, ReaderOptions{})
	require.NoError(t, err)
	require.Equal(t, []shown{{"k", "v", 0}}, show(got))
	rest, err := io.ReadAll(br)
	require.NoError(t, err)
	require.Equal(t, next, string(rest))
}

func TestReaderStringEncodings(t *testing.T) {
	i32 := binary.LittleEndian.AppendUint32(nil, 0x80000000)
	data := rdbFile(10,
		[]byte{opAux}, str("redis-bits"), []byte{0xc0, 64},
		[]byte{opSelectDB, 0, opResizeDB, 9, 0},
		[]byte{typeString, 0xc0, 0xfb, 0xc1, 0x39, 0x30},
		[]byte{typeString}, str("int16 min"), []byte{0xc1, 0x00, 0x80},
		[]byte{typeString}, str("int16 max"), []byte{0xc1, 0xff, 0x7f},
		[]byte{typeString}, str("int32 min"), []byte{0xc2}, i32,
		// "abc", then 9 bytes from 3 back: a long back reference overlapping
		// its own output.
		[]byte{typeString}, str("lzf"), []byte{0xc3, 7, 12, 0x02, 'a', 'b', 'c', 0xe0, 0x00, 0x02},
		[]byte{typeString}, str("lzf short"), []byte{0xc3, 4, 5, 0x00, 'a', 0x40, 0x00},
		[]byte{typeString, 0x40, 3}, []byte("k14"), []byte{0x40, 1, 'v'},
		[]byte{typeString, len32, 0, 0, 0, 3}, []byte("k32"), str("v"),
		[]byte{typeString, len64, 0, 0, 0, 0, 0, 0, 0, 3}, []byte("k64"), str("v"),
	)
	got, aux, err := readAll(bytes.NewReader(data), ReaderOptions{})
	require.NoError(t, err)
	require.Equal(t, []shown{
		{"-5", "12345", 0},
		{"int16 min", "-32768", 0},
		{"int16 max", "32767", 0},
		{"int32 min", "-2147483648", 0},
		{"lzf", "abcabcabcabc", 0},
		{"lzf short", "aaaaa", 0},
		{"k14", "v", 0},
		{"k32", "v", 0},
		{"k64", "v", 0},
	}, show(got))
	require.Equal(t, []Aux{{"redis-bits", "64"}}, aux)
}

// What the reader reads past: it must land on the next key each time, with
// the expiry meant for it.
func TestReaderSkipsWhatIsNotAKey(t *testing.T) {
	moduleID := []byte{len64, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0}
	data := rdbFile(11,
		[]byte{opAux}, str("redis-ver"), str("7.2.4"),
		[]byte{opFunction2}, str("#!lua name=lib\nredis.register_function('f', f)"),
		[]byte{opFunction2, 0xc3, 4, 5, 0x00, 'a', 0x40, 0x00},
		[]byte{opModuleAux}, moduleID, []byte{moduleUInt, 2},
		[]byte{moduleSInt, 0x40, 0x10, moduleUInt, 5, moduleFloat, 1, 2, 3, 4, moduleDouble, 1, 2, 3, 4, 5, 6, 7, 8},
		[]byte{moduleString}, str("module data"), []byte{moduleString, 0xc1, 1, 2, moduleEOF},
		[]byte{opSelectDB, 0, opResizeDB, 0x40, 0x80, 2},
		[]byte{opIdle, 0x40, 0x10, opFreq, 5},
		[]byte{opExpireTime}, binary.LittleEndian.AppendUint32(nil, 1700000000),
		[]byte{typeString}, str("seconds"), str("a"),
		[]byte{opFreq, 7, typeString}, str("no expiry"), str("b"),
		[]byte{opSelectDB, 3, opSlotInfo, 0x41, 0x00, 4, 2},
		[]byte{opExpireTimeMs}, le64(1700000000123),
		[]byte{typeString}, str("db 3"), str("c"),
		[]byte{opExpireTimeMs}, le64(0),
		[]byte{typeString}, str("at the epoch"), str("d"),
		[]byte{opAux}, str("after"), str("keys"),
	)
	got, aux, err := readAll(bytes.NewReader(data), ReaderOptions{})
	require.NoError(t, err)
	require.Equal(t, []shown{
		{"seconds", "a", 1700000000000},
		{"no expiry", "b", 0},
		{"db 3", "c", 1700000000123},
		{"at the epoch", "d", -1},
	}, show(got))
	require.Equal(t, []Aux{{"redis-ver", "7.2.4"}, {"after", "keys"}}, aux)
}

func TestReaderRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		body []byte
		is   error
		msg  string
	}{
		{"a hash", cat([]byte{4}, str("h"), []byte{1}, str("f"), str("v")), ErrUnsupportedType,
			"rdb: unsupported value type: type 4 (hash) at offset 20; redcell keys are strings"},
		{"a listpack set", cat([]byte{20}, str("s")), ErrUnsupportedType,
			"rdb: unsupported value type: type 20 (set listpack) at offset 20; redcell keys are strings"},
		{"a pre-GA function", cat([]byte{opFunctionPre}, str("lib")), ErrUnsupportedType,
			"rdb: unsupported value type: opcode 246 (a function library as Redis 7.0's release candidates wrote it) at offset 20"},
		{"an unknown byte", []byte{8}, ErrCorrupt,
			"rdb: corrupt file: unknown opcode or value type 8 at offset 20"},
		{"a length as a string encoding", []byte{opResizeDB, 0xc0, 1}, ErrCorrupt,
			"rdb: corrupt file: a string encoding where a length belongs at offset 21"},
		{"an unknown length encoding", cat([]byte{typeString, 0x82}), ErrCorrupt,
			"rdb: corrupt file: unknown length encoding 0x82 at offset 21"},
		{"an unknown string encoding", cat([]byte{typeString, 0xc4}), ErrCorrupt,
			"rdb: corrupt file: unknown string encoding 4 at offset 21"},
		{"an LZF string longer than its bytes can make", cat([]byte{typeString}, str("k"), []byte{0xc3, 1, 0x41, 0x00}), ErrCorrupt,
			"rdb: corrupt file: 1 LZF bytes cannot make 256 at offset 23"},
		{"a bad LZF string", cat([]byte{typeString}, str("k"), []byte{0xc3, 2, 5, 0x40, 0x00}), ErrCorrupt,
			"rdb: corrupt file: the LZF string at offset 23: a back reference points before the start"},
		{"module aux data without its when", cat([]byte{opModuleAux, 1, moduleSInt}), ErrCorrupt,
			"rdb: corrupt file: module aux data's when opcode is 1, not 2, at offset 22"},
		{"an unknown module opcode", cat([]byte{opModuleAux, 1, moduleUInt, 2, 6}), ErrCorrupt,
			"rdb: corrupt file: unknown module value opcode 6 at offset 24"},
	} {
		data := rdbFile(9, []byte{opSelectDB, 0, opResizeDB, 1, 0}, []byte{typeString}, str("ok"), str("v"), tc.body)
		r, err := NewReader(bytes.NewReader(data), ReaderOptions{})
		require.NoError(t, err, tc.name)
		e, err := r.Next()
		require.NoError(t, err, tc.name)
		require.Equal(t, "ok", string(e.Key), tc.name)
		_, err = r.Next()
		require.ErrorIs(t, err, tc.is, tc.name)
		require.EqualError(t, err, tc.msg, tc.name)
		_, again := r.Next()
		require.Equal(t, err, again, "%s: the error again", tc.name)
	}
}

func TestReaderHeader(t *testing.T) {
	for v := 1; v <= MaxReadVersion; v++ {
		got, _, err := readAll(bytes.NewReader(rdbFile(v, []byte{typeString}, str("k"), str("v"))), ReaderOptions{})
		require.NoError(t, err, "version %d", v)
		require.Equal(t, []shown{{"k", "v", 0}}, show(got), "version %d", v)
	}
	for _, tc := range []struct {
		header string
		is     error
		msg    string
	}{
		{"REDIS0013", ErrUnsupportedVersion, "rdb: unsupported RDB version: the file is version 13, this reader knows 1 to 12"},
		{"REDIS0000", ErrUnsupportedVersion, "rdb: unsupported RDB version: the file is version 0, this reader knows 1 to 12"},
		{"REDIS00a9", ErrCorrupt, `rdb: corrupt file: the header's version "00a9" is not four digits`},
		{"REDIS+009", ErrCorrupt, `rdb: corrupt file: the header's version "+009" is not four digits`},
		{"redis0009", ErrCorrupt, `rdb: corrupt file: the header "redis0009" does not begin with REDIS`},
		{"REDIS000", io.ErrUnexpectedEOF, "rdb: reading at offset 8: unexpected EOF"},
		{"", io.ErrUnexpectedEOF, "rdb: reading at offset 0: unexpected EOF"},
	} {
		_, err := NewReader(strings.NewReader(tc.header), ReaderOptions{})
		require.ErrorIs(t, err, tc.is, tc.header)
		require.EqualError(t, err, tc.msg, tc.header)
	}
	_, err := NewReader(strings.NewReader("REDIS0009"), ReaderOptions{MaxLen: -1})
	require.EqualError(t, err, "rdb: ReaderOptions.MaxLen must not be negative, got -1")
}

// Before version 5 there is no checksum: the file ends at its EOF opcode.
func TestReaderOldVersionEndsAtEOFOpcode(t *testing.T) {
	br := bufio.NewReader(bytes.NewReader(append(rdbFile(4, []byte{typeString}, str("k"), str("v")), "rest"...)))
	got, _, err := readAll(br, ReaderOptions{})
	require.NoError(t, err)
	require.Equal(t, []shown{{"k", "v", 0}}, show(got))
	rest, _ := io.ReadAll(br)
	require.Equal(t, "rest", string(rest))
}

func TestReaderChecksum(t *testing.T) {
	data := writeFile(t, nil, entries(shown{"k", "v", 0}))
	sum := binary.LittleEndian.Uint64(data[len(data)-8:])

	unchecked := append(bytes.Clone(data[:len(data)-8]), make([]byte, 8)...)
	got, _, err := readAll(bytes.NewReader(unchecked), ReaderOptions{})
	require.NoError(t, err, "a zero checksum is Redis's rdbchecksum no")
	require.Equal(t, []shown{{"k", "v", 0}}, show(got))

	wrong := bytes.Clone(data)
	binary.LittleEndian.PutUint64(wrong[len(wrong)-8:], sum^1)
	got, _, err = readAll(bytes.NewReader(wrong), ReaderOptions{})
	require.ErrorIs(t, err, ErrChecksum)
	require.EqualError(t, err, fmt.Sprintf("rdb: checksum mismatch: the file says %#016x, its contents' CRC-64 is %#016x", sum^1, sum))
	require.Equal(t, []shown{{"k", "v", 0}}, show(got), "the key came before the checksum")
}

func TestReaderMaxLen(t *testing.T) {
	data := writeFile(t, []Aux{{"a", "0123456789"}}, entries(shown{"0123456789", "0123456789", 0}))
	_, _, err := readAll(bytes.NewReader(data), ReaderOptions{MaxLen: 10})
	require.NoError(t, err, "strings of exactly MaxLen")

	for _, tc := range []struct {
		name string
		data []byte
		opts ReaderOptions
		msg  string
	}{
		{"a value", writeFile(t, nil, entries(shown{"k", "01234567890", 0})), ReaderOptions{MaxLen: 10},
			"rdb: string longer than the reader's MaxLen: a string of 11 bytes at offset 17, MaxLen 10"},
		{"an aux field", writeFile(t, []Aux{{"01234567890", ""}}, nil), ReaderOptions{MaxLen: 10},
			"rdb: string longer than the reader's MaxLen: a string of 11 bytes at offset 10, MaxLen 10"},
		{"an LZF string's length", rdbFile(9, []byte{typeString}, str("k"), []byte{0xc3, 4, 11, 0x00, 'a', 0xe0, 0x07}), ReaderOptions{MaxLen: 10},
			"rdb: string longer than the reader's MaxLen: a string of 11 bytes at offset 12, MaxLen 10"},
		{"a 64-bit length", rdbFile(9, []byte{typeString, len64, 0, 0, 1, 0, 0, 0, 0, 0}), ReaderOptions{},
			"rdb: string longer than the reader's MaxLen: a string of 1099511627776 bytes at offset 10, MaxLen 536870912"},
	} {
		_, _, err := readAll(bytes.NewReader(tc.data), tc.opts)
		require.ErrorIs(t, err, ErrTooLarge, tc.name)
		require.EqualError(t, err, tc.msg, tc.name)
	}
}

// A length field claiming far more than the stream holds costs memory for
// what arrives, not for what it claims.
func TestReaderAllocatesAsTheBytesArrive(t *testing.T) {
	data := cat([]byte("REDIS0009"), []byte{typeString}, str("k"), []byte{len32, 0x1f, 0xff, 0xff, 0xff}, make([]byte, 1000))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := readAll(bytes.NewReader(data), ReaderOptions{MaxLen: 1 << 30})
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes allocated reading a 512 MiB claim")
}

// A reader's own errors come through, not as a truncation.
func TestReaderPassesOnReadErrors(t *testing.T) {
	data := writeFile(t, nil, entries(shown{"k", "v", 0}))
	errBoom := errors.New("connection reset")
	_, _, err := readAll(io.MultiReader(bytes.NewReader(data[:20]), iotest.ErrReader(errBoom)), ReaderOptions{})
	require.ErrorIs(t, err, errBoom)
	require.NotErrorIs(t, err, io.ErrUnexpectedEOF)
}

// smallFiles are the files the truncation and corruption tests cut and
// flip: one from the Writer, one with every encoding the Reader decodes.
func smallFiles(t testing.TB) map[string][]byte {
	return map[string][]byte{
		"written": writeFile(t, []Aux{{"redis-ver", "7.0.15"}, {"ctime", "1700000000"}}, entries(
			shown{"k", "v", 1700000000000},
			shown{"empty", "", 0},
			shown{"bin\x00\r\n", strings.Repeat("x", 70), 0},
		)),
		"encodings": rdbFile(10,
			[]byte{opAux}, str("redis-bits"), []byte{0xc0, 64},
			[]byte{opSelectDB, 0, opResizeDB, 3, 1, opFunction2}, str("#!lua name=l"),
			[]byte{opExpireTime, 1, 2, 3, 4, opIdle, 0x40, 0x10, opFreq, 5},
			[]byte{typeString, 0xc0, 0xfb, 0xc1, 0x39, 0x30},
			[]byte{typeString, len32, 0, 0, 0, 1, 'k', 0xc2, 1, 2, 3, 4},
			[]byte{typeString}, str("lzf"), []byte{0xc3, 7, 12, 0x02, 'a', 'b', 'c', 0xe0, 0x00, 0x02},
		),
	}
}

func TestReaderTruncatedAtEveryOffset(t *testing.T) {
	for name, data := range smallFiles(t) {
		whole, _, err := readAll(bytes.NewReader(data), ReaderOptions{})
		require.NoError(t, err, name)
		for n := range len(data) {
			got, _, err := readAll(bytes.NewReader(data[:n]), ReaderOptions{})
			require.ErrorIs(t, err, io.ErrUnexpectedEOF, "%s cut to %d of %d bytes", name, n, len(data))
			require.Equal(t, show(whole[:len(got)]), show(got), "%s cut to %d bytes: the keys before the cut", name, n)
		}
	}
}

// Every single-bit flip, and every byte inverted, is an error, or (where
// the flip falls where no reader looks, like a version digit turned from 9
// to 1, which has no checksum) the very same keys and aux fields.
func TestReaderFlippedByte(t *testing.T) {
	for name, data := range smallFiles(t) {
		whole, wholeAux, err := readAll(bytes.NewReader(data), ReaderOptions{})
		require.NoError(t, err, name)
		same := 0
		for i := range data {
			for _, mask := range []byte{1, 2, 4, 8, 16, 32, 64, 128, 0xff} {
				flipped := bytes.Clone(data)
				flipped[i] ^= mask
				got, aux, err := readAll(bytes.NewReader(flipped), ReaderOptions{})
				if err != nil {
					continue
				}
				same++
				require.Equal(t, show(whole), show(got), "%s: byte %d ^ %#x read without an error", name, i, mask)
				require.Equal(t, wholeAux, aux, "%s: byte %d ^ %#x read without an error", name, i, mask)
			}
		}
		require.LessOrEqual(t, same, 1, "%s: flips read without an error (only 9 -> 1 in the version may be)", name)
	}
}

func TestLZFDecompress(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		n    int
		want string
		err  error
	}{
		{"a literal", "\x02abc", 3, "abc", nil},
		{"a short back reference", "\x00a\x40\x00", 5, "aaaaa", nil},
		{"a long back reference", "\x02abc\xe0\x00\x02", 12, "abcabcabcabc", nil},
		{"a long back reference's longest", "\x00a\xe0\xff\x00", 265, strings.Repeat("a", 265), nil},
		{"a disjoint copy", "\x03abcd\x20\x03", 7, "abcdabc", nil},
		{"an offset's high bits", "\x1f" + strings.Repeat("a", 32) + "\x1f" + strings.Repeat("b", 32) + "\x1f" + strings.Repeat("c", 32) +
			"\x1f" + strings.Repeat("d", 32) + "\x1f" + strings.Repeat("e", 32) + "\x1f" + strings.Repeat("f", 32) +
			"\x1f" + strings.Repeat("g", 32) + "\x1f" + strings.Repeat("h", 32) + "\x1f" + strings.Repeat("i", 32) + "\x21\x1f",
			32*9 + 3, strings.Repeat("a", 32) + strings.Repeat("b", 32) + strings.Repeat("c", 32) + strings.Repeat("d", 32) +
				strings.Repeat("e", 32) + strings.Repeat("f", 32) + strings.Repeat("g", 32) + strings.Repeat("h", 32) +
				strings.Repeat("i", 32) + "aaa", nil},
		{"empty", "", 0, "", nil},
		{"a back reference first", "\x40\x00", 4, "", errLZFBack},
		{"a back reference too far", "\x01ab\x20\x02", 5, "", errLZFBack},
		{"a literal past the input", "\x05ab", 6, "", errLZFInput},
		{"a back reference without its offset", "\x02abc\x40", 7, "", errLZFInput},
		{"a long back reference without its length", "\x02abc\xe0", 14, "", errLZFInput},
		{"a long back reference without its offset", "\x02abc\xe0\x00", 14, "", errLZFInput},
		{"a literal past the output", "\x02abc", 2, "", errLZFOutput},
		{"a back reference past the output", "\x02abc\x40\x02", 5, "", errLZFOutput},
		{"less than the stated length", "\x02abc", 4, "", errLZFShort},
	} {
		dst := make([]byte, tc.n)
		err := lzfDecompress(dst, []byte(tc.src))
		require.Equal(t, tc.err, err, tc.name)
		if err == nil {
			require.Equal(t, tc.want, string(dst), tc.name)
		}
	}
}
