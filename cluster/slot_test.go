package cluster

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCRC16IsXModem(t *testing.T) {
	// The check value of CRC-16/XMODEM, and Redis's own test vectors
	// (src/crc16.c: "123456789" is 0x31C3).
	require.Equal(t, uint16(0x31C3), crc16([]byte("123456789")))
	require.Equal(t, uint16(0), crc16(nil))
}

// The slots Redis Cluster gives these keys: CLUSTER KEYSLOT answered by
// redis-server 7.0.15 --cluster-enabled yes.
func TestSlotAsRedisCluster(t *testing.T) {
	for _, c := range []struct {
		key  string
		slot int
	}{
		{"foo", 12182},
		{"bar", 5061},
		{"user123", 13438},
		{"", 0},
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"user1000", 3443},
		{"foo{}{bar}", 8363},    // "{}" is empty: the whole key
		{"foo{{bar}}zap", 4015}, // the tag is "{bar"
		{"foo{bar}{zap}", 5061}, // the first tag: "bar"
		{"{", 4092},
		{"}{", 12793},
	} {
		require.Equal(t, c.slot, Slot([]byte(c.key)), "%q", c.key)
	}
}

func BenchmarkSlot(b *testing.B) {
	key := []byte("user:1234567:login")
	b.ReportAllocs()
	for b.Loop() {
		_ = Slot(key)
	}
}
