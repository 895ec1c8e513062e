package storage

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// MemoryUsage is a key's 32-byte entry, its share of its shard's 8-byte index
// slots (rounded up), and its bytes if it is longer than an entry holds.
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
	require.Equal(t, int64(32+8*8), usage("k"), "alone: the whole 8-slot index")
	long := strings.Repeat("x", 30)
	throttle(long)
	require.Equal(t, int64(32+8*8/2), usage("k"))
	require.Equal(t, int64(32+8*8/2+30), usage(long), "a long key's bytes in the arena")
	throttle(strings.Repeat("y", inlineKey)) // the longest key an entry holds
	require.Equal(t, int64(32+22), usage(strings.Repeat("y", inlineKey)), "64/3 rounded up")
	for i := 3; i < 6; i++ {
		throttle(fmt.Sprint("k", i))
	}
	require.Equal(t, int64(32+11), usage("k"), "6 keys in 8 slots")
	throttle("k6") // a 7th key would fill more than 3/4: 16 slots
	require.Equal(t, int64(32+19), usage("k"), "7 keys in 16 slots")

	_, ok = s.MemoryUsage([]byte("k"), t0+sec(10))
	require.False(t, ok, "an expired key is absent")
	require.Equal(t, 7, s.Len(), "and MemoryUsage does not delete it")
}
