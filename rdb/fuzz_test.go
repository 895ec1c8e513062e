package rdb

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// readErrors are the errors a Reader documents; any input ends in io.EOF
// or one of them.
var readErrors = []error{ErrCorrupt, ErrChecksum, ErrUnsupportedType, ErrUnsupportedVersion, ErrTooLarge, io.ErrUnexpectedEOF}

// FuzzReader: any bytes end in a documented error or a clean end, within
// memory bounded by MaxLen (the fuzzer's own limit catches more), and
// whatever was read, written out again, reads back the same.
func FuzzReader(f *testing.F) {
	f.Add(writeFile(f, roundTripAux, entries(shown{"k", "v", 1700000000000}, shown{"", "", 0})))
	for _, data := range smallFiles(f) {
		f.Add(data)
	}
	redisDump, err := os.ReadFile(redisTestdata)
	require.NoError(f, err)
	f.Add(redisDump)
	f.Fuzz(func(t *testing.T, data []byte) {
		got, aux, err := readAll(bytes.NewReader(data), ReaderOptions{MaxLen: 1 << 20})
		// A wrong checksum comes after every key: most of the fuzzer's
		// mutations end there, and what they read still must write out
		// and read back the same.
		if err != nil && !errors.Is(err, ErrChecksum) {
			for _, known := range readErrors {
				if errors.Is(err, known) {
					return
				}
			}
			t.Fatalf("an undocumented error: %v", err)
		}
		again, againAux, err := readAll(bytes.NewReader(writeFile(t, aux, got)), ReaderOptions{})
		require.NoError(t, err)
		require.Equal(t, show(got), show(again))
		require.Equal(t, aux, againAux)
	})
}

// FuzzRoundTrip: any key, value and expiry, and an aux field made of them,
// come back as written.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("k"), []byte("v"), int64(0))
	f.Add([]byte("bin\r\n\x00"), bytes.Repeat([]byte{0}, 100), int64(-1))
	f.Add([]byte{}, []byte{}, int64(1)<<62)
	f.Add([]byte("12345"), bytes.Repeat([]byte("ab"), 20000), int64(-1)<<63)
	f.Fuzz(func(t *testing.T, key, value []byte, expire int64) {
		want := []Entry{{key, value, expire}, {value, key, 0}}
		wantAux := []Aux{{string(key), string(value)}}
		got, aux, err := readAll(bytes.NewReader(writeFile(t, wantAux, want)), ReaderOptions{})
		require.NoError(t, err)
		require.Equal(t, show(want), show(got))
		require.Equal(t, wantAux, aux)
	})
}
