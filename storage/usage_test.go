package storage

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// MemoryUsage is a key's share of its shard's 32-byte slots (rounded up),
// and its bytes if it is longer than an entry holds.
func TestMemoryUsage(t *testing.T) {
	s := New(Config{Shards: 1})
	r := mustRate(t, 4, 1, 10, 1)
	usage := func(key string) int64 {
		t.Helper()
		n, ok := s.MemoryUsage([]byte(key), t0)
		require.True(t, ok, "%q is live", key)
		return n
	}
	_, ok := s.MemoryUsage([]byte("absent"), t0)
	require.False(t, ok)

	throttle := func(key string) {
		_, err := s.Throttle([]byte(key), r, t0)
		require.NoError(t, err)
	}
	throttle("k")
	require.Equal(t, int64(8*32), usage("k"), "alone: the whole table of 8 slots")
	long := strings.Repeat("x", 30)
	throttle(long)
	require.Equal(t, int64(8*32/2), usage("k"))
	require.Equal(t, int64(8*32/2+30), usage(long), "a long key's bytes in the arena")
	throttle(strings.Repeat("y", inlineKey)) // the longest key an entry holds
	require.Equal(t, int64(86), usage(strings.Repeat("y", inlineKey)), "256/3 rounded up")
	for i := 3; i < 7; i++ {
		throttle(fmt.Sprint("k", i))
	}
	require.Equal(t, int64(37), usage("k"), "7 keys in 8 slots")
	throttle("k7") // an 8th key would fill more than 7/8: 10 slots
	require.Equal(t, int64(40), usage("k"), "8 keys in 10 slots")

	_, ok = s.MemoryUsage([]byte("k"), t0+sec(10))
	require.False(t, ok, "an expired key is absent")
	require.Equal(t, 8, s.Len(), "and MemoryUsage does not delete it")
}
