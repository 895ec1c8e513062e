package rdb

import (
	"bytes"
	"io"
	"strconv"
	"testing"
)

// countingWriter is io.Discard that counts what it is given.
type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return io.Discard.Write(p)
}

// BenchmarkWriter writes a snapshot of 1M small keys, half of them
// expiring, as a full sync would: one op is the whole file.
func BenchmarkWriter(b *testing.B) {
	const n = 1_000_000
	key := append(make([]byte, 0, 32), "user:"...)
	value := bytes.Repeat([]byte("v"), 16)
	var out countingWriter
	b.ReportAllocs()
	for b.Loop() {
		w, err := NewWriter(&out, nil, n, n/2)
		if err != nil {
			b.Fatal(err)
		}
		for i := range n {
			e := Entry{Key: strconv.AppendInt(key[:5], int64(i), 10), Value: value}
			if i%2 == 0 {
				e.ExpireAtMs = 1700000000000 + int64(i)
			}
			if err := w.Write(e); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	entries := float64(b.N) * n
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/entries, "ns/entry")
	b.ReportMetric(float64(out.n)/entries, "bytes/entry")
}
