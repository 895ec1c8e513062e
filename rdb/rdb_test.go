package rdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// cat joins byte strings, for files spelled out byte by byte.
func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

// withCRC appends the checksum Redis expects after the EOF opcode.
func withCRC(b []byte) []byte { return append(b, le64(crc64Update(0, b))...) }

func TestWriterBytes(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, []Aux{{"redis-ver", "7.0.15"}, {"aof-base", "0"}}, 2, 1)
	require.NoError(t, err)
	require.NoError(t, w.Write(Entry{Key: []byte("k"), Value: []byte("v"), ExpireAtMs: 1700000000123}))
	require.NoError(t, w.Write(Entry{Key: []byte("n"), Value: []byte("12345")}))
	require.NoError(t, w.Close())

	want := withCRC(cat(
		[]byte("REDIS0009"),
		[]byte{opAux, 9}, []byte("redis-ver"), []byte{6}, []byte("7.0.15"),
		[]byte{opAux, 8}, []byte("aof-base"), []byte{1, '0'},
		[]byte{opSelectDB, 0, opResizeDB, 2, 1},
		[]byte{opExpireTimeMs}, le64(1700000000123), []byte{typeString, 1, 'k', 1, 'v'},
		// No integer encoding: "12345" goes as its five characters.
		[]byte{typeString, 1, 'n', 5}, []byte("12345"),
		[]byte{opEOF},
	))
	require.Equal(t, want, buf.Bytes())
}

func TestWriterLengthEncodings(t *testing.T) {
	for _, tc := range []struct {
		n    uint64
		want []byte
	}{
		{0, []byte{0x00}},
		{63, []byte{0x3f}},
		{64, []byte{0x40, 0x40}},
		{300, []byte{0x41, 0x2c}},
		{16383, []byte{0x7f, 0xff}},
		{16384, []byte{0x80, 0, 0, 0x40, 0}},
		{1<<32 - 1, []byte{0x80, 0xff, 0xff, 0xff, 0xff}},
		{1 << 32, []byte{0x81, 0, 0, 0, 1, 0, 0, 0, 0}},
	} {
		if got := appendLen(nil, tc.n); !bytes.Equal(got, tc.want) {
			t.Errorf("appendLen(%d) = % x want % x", tc.n, got, tc.want)
		}
	}
}

// A value long enough for a 32-bit length is written whole after it.
func TestWriterLongValue(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, nil, 1, 0)
	require.NoError(t, err)
	value := bytes.Repeat([]byte("x"), 100_000)
	require.NoError(t, w.Write(Entry{Key: []byte("big"), Value: value}))
	require.NoError(t, w.Close())

	want := withCRC(cat(
		[]byte("REDIS0009"), []byte{opSelectDB, 0, opResizeDB, 1, 0},
		[]byte{typeString, 3}, []byte("big"), []byte{0x80, 0, 0x01, 0x86, 0xa0}, value,
		[]byte{opEOF},
	))
	require.Equal(t, want, buf.Bytes())
}

func TestNewWriterRefusesNegativeSizes(t *testing.T) {
	var buf bytes.Buffer
	_, err := NewWriter(&buf, nil, -1, 0)
	require.EqualError(t, err, "rdb: RESIZEDB sizes must not be negative (keys -1, expires 0)")
	_, err = NewWriter(&buf, nil, 1, -2)
	require.EqualError(t, err, "rdb: RESIZEDB sizes must not be negative (keys 1, expires -2)")
	require.Zero(t, buf.Len(), "nothing written")
}

// failingWriter fails every write after the first ok bytes, and fails the
// test if anyone closes it.
type failingWriter struct {
	t  *testing.T
	ok int
}

var errDiskFull = errors.New("disk full")

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) <= f.ok {
		f.ok -= len(p)
		return len(p), nil
	}
	n := f.ok
	f.ok = 0
	return n, errDiskFull
}

func (f *failingWriter) Close() error {
	f.t.Error("Writer.Close closed the underlying writer")
	return nil
}

func TestWriterReportsTheFirstWriteErrorFromThenOn(t *testing.T) {
	fw := &failingWriter{t: t, ok: 100}
	w, err := NewWriter(fw, nil, 1, 0)
	require.NoError(t, err, "the header is buffered")
	// Larger than the buffer, so the failure shows at this Write.
	err = w.Write(Entry{Key: []byte("k"), Value: make([]byte, 2*writeBufferSize)})
	require.ErrorIs(t, err, errDiskFull)
	require.ErrorIs(t, w.Write(Entry{Key: []byte("k2")}), errDiskFull)
	require.ErrorIs(t, w.Close(), errDiskFull)
}

// Whichever byte the disk fills at, the checksum's last included, Close
// says so.
func TestWriterErrorAtClose(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, nil, 1, 0)
	require.NoError(t, err)
	require.NoError(t, w.Write(Entry{Key: []byte("k"), Value: []byte("v")}))
	require.NoError(t, w.Close())
	for ok := range buf.Len() {
		w, err := NewWriter(&failingWriter{t: t, ok: ok}, nil, 1, 0)
		require.NoError(t, err)
		require.NoError(t, w.Write(Entry{Key: []byte("k"), Value: []byte("v")}))
		require.ErrorIs(t, w.Close(), errDiskFull, "the disk full after %d of %d bytes", ok, buf.Len())
	}
}

func TestWriterAfterClose(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, nil, 0, 0)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	n := buf.Len()
	require.ErrorIs(t, w.Write(Entry{Key: []byte("k")}), ErrClosed)
	require.ErrorIs(t, w.Close(), ErrClosed)
	require.Equal(t, n, buf.Len(), "nothing written after Close")
}

func TestWriterDoesNotAllocatePerEntry(t *testing.T) {
	w, err := NewWriter(io.Discard, nil, 0, 0)
	require.NoError(t, err)
	e := Entry{Key: []byte("user:1234"), Value: bytes.Repeat([]byte("v"), 3000), ExpireAtMs: 1700000000000}
	allocs := testing.AllocsPerRun(1000, func() {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs, "allocations per Write")
}
