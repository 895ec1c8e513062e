package cluster

import (
	"math/rand/v2"
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

// crc16 two bytes a step equals the plain byte-a-step definition.
func TestCRC16TwoBytesAStepIsTheDefinition(t *testing.T) {
	bitwise := func(b []byte) uint16 {
		var crc uint16
		for _, c := range b {
			crc ^= uint16(c) << 8
			for range 8 {
				if crc&0x8000 != 0 {
					crc = crc<<1 ^ 0x1021
				} else {
					crc <<= 1
				}
			}
		}
		return crc
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 2000; n++ {
		b := make([]byte, n%67)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		require.Equal(t, bitwise(b), crc16(b), "%x", b)
	}
}

// Slot's one pass agrees with the rule read plainly, for keys with braces
// anywhere.
func TestSlotOnePassIsTheRule(t *testing.T) {
	rule := func(key []byte) int {
		for s := 0; s < len(key); s++ {
			if key[s] == '{' {
				for e := s + 1; e < len(key); e++ {
					if key[e] == '}' {
						if e == s+1 {
							return int(crc16(key) & (Slots - 1))
						}
						return int(crc16(key[s+1:e]) & (Slots - 1))
					}
				}
				return int(crc16(key) & (Slots - 1))
			}
		}
		return int(crc16(key) & (Slots - 1))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte("ab{}")
	for n := 0; n < 5000; n++ {
		b := make([]byte, n%13)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		require.Equal(t, rule(b), Slot(b), "%q", b)
	}
}
