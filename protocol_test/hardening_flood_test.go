package protocol_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/server"
)

// attack is one hostile connection's behaviour.
type attack struct {
	name string
	run  func(conn net.Conn, rng *rand.Rand)
}

// writeAndDrain sends b, then reads whatever comes until the server closes
// the connection or the deadline passes.
func writeAndDrain(conn net.Conn, b string) {
	_, _ = io.WriteString(conn, b)
	_, _ = io.Copy(io.Discard, conn)
}

// attacks are what the flood sends: malformed RESP of every kind Redis's
// own test suite and redcell's reader (package resp) know, junk, and clients that misbehave at
// the transport. None of them is a command that could change a key.
var attacks = []attack{
	{"negative multibulk length", func(c net.Conn, _ *rand.Rand) { writeAndDrain(c, "*-5\r\n") }},
	{"absurd multibulk length", func(c net.Conn, _ *rand.Rand) { writeAndDrain(c, "*9223372036854775807\r\n") }},
	{"absurd bulk length", func(c net.Conn, _ *rand.Rand) { writeAndDrain(c, "*1\r\n$9223372036854775807\r\n") }},
	{"bulk over the limit, then its bytes", func(c net.Conn, _ *rand.Rand) {
		writeAndDrain(c, "*2\r\n$3\r\nDEL\r\n$1048577\r\n"+strings.Repeat("v", 64<<10))
	}},
	{"too many arguments", func(c net.Conn, _ *rand.Rand) { writeAndDrain(c, "*100000\r\n$3\r\nDEL\r\n") }},
	{"truncated command, then hang up", func(c net.Conn, _ *rand.Rand) {
		_, _ = io.WriteString(c, "*3\r\n$3\r\nDEL\r\n$8\r\nvictim:1\r\n$8\r\nvictim:")
	}},
	{"binary junk", func(c net.Conn, rng *rand.Rand) {
		junk := make([]byte, 1+rng.IntN(4096))
		for i := range junk {
			junk[i] = byte(rng.UintN(256))
		}
		junk[0] = '*' // shaped like RESP, so that the framing is attacked
		writeAndDrain(c, string(junk))
	}},
	{"huge inline line", func(c net.Conn, _ *rand.Rand) { writeAndDrain(c, strings.Repeat("x", 100<<10)) }},
	{"inline line of 32767 arguments", func(c net.Conn, _ *rand.Rand) {
		writeAndDrain(c, strings.Repeat("a ", 32767)+"\r\nQUIT\r\n")
	}},
	{"wrong types", func(c net.Conn, _ *rand.Rand) { writeAndDrain(c, "*1\r\n:5\r\n") }},
	{"nested array", func(c net.Conn, _ *rand.Rand) { writeAndDrain(c, "*1\r\n*1\r\n$3\r\nDEL\r\n") }},
	{"unbalanced quotes around a delete", func(c net.Conn, _ *rand.Rand) { writeAndDrain(c, "DEL \"victim:1\r\n") }},
	{"length without CR", func(c net.Conn, _ *rand.Rand) { writeAndDrain(c, "*1\n$3\nDEL\n") }},
	{"bulk longer than announced", func(c net.Conn, _ *rand.Rand) { writeAndDrain(c, "*2\r\n$3\r\nDEL\r\n$1\r\nvictim:1\r\n") }},
	{"slow drip of a bad command", func(c net.Conn, _ *rand.Rand) {
		for _, b := range []byte("*2\r\n$3\r\nDEL\r\n$-8\r\n") {
			if _, err := c.Write([]byte{b}); err != nil {
				return
			}
		}
		_, _ = io.Copy(io.Discard, c)
	}},
	{"65536 empty arguments a few bytes at a time, then hang up", func(c net.Conn, _ *rand.Rand) {
		_, _ = io.WriteString(c, "*65536\r\n$3\r\nDEL\r\n")
		for i := 0; i < 2000; i++ {
			if _, err := io.WriteString(c, "$0\r\n\r\n"); err != nil {
				return
			}
		}
	}},
	{"replies never read", func(c net.Conn, _ *rand.Rand) {
		_, _ = io.WriteString(c, strings.Repeat("COMMAND\r\n", 5000))
	}},
	{"a stream of PINGs never pausing on a command boundary", func(c net.Conn, _ *rand.Rand) {
		go func() { _, _ = io.Copy(io.Discard, c) }()
		cmd := "*1\r\n$4\r\nPING\r\n"
		chunk := strings.Repeat(cmd, 300) + cmd[:7]
		for i := 0; i < 200; i++ { // 2.8 MB
			if _, err := io.WriteString(c, cmd[7:]+chunk); err != nil {
				return
			}
		}
	}},
	{"reset", func(c net.Conn, _ *rand.Rand) {
		_, _ = io.WriteString(c, "*2\r\n$4\r\nECHO\r\n$100\r\nabc")
		_ = c.(*net.TCPConn).SetLinger(0)
	}},
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// Many connections send malformed RESP while other clients keep making
// decisions: every good client gets exactly the right replies, the server's
// heap stays bounded, and no key changes that the good clients did not
// change.
func TestMalformedFloodWhileClientsDecide(t *testing.T) {
	ts := harness.StartServer(t, harness.WithLimits(server.Limits{MaxOutput: 4 << 20}))
	bg := harness.Ctx(t)
	admin := ts.Raw(t)

	// Keys the flood must leave exactly as they are.
	const victims = 200
	for i := 0; i < victims; i++ {
		admin.Write(testkit.Command("CL.THROTTLE", fmt.Sprintf("victim:%d", i), "9", "1", "60", fmt.Sprint(1+i%5)))
	}
	before := map[string]string{}
	for i := 0; i < victims; i++ {
		require.Equal(t, '*', rune(admin.Read()[0]))
	}
	for i := 0; i < victims; i++ {
		key := fmt.Sprintf("victim:%d", i)
		before[key] = admin.Do("GET", key)
	}

	baseHeap := heapInUse()
	var peakHeap atomic.Uint64
	stopSampling := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-tick.C:
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peakHeap.Load() {
					peakHeap.Store(m.HeapInuse)
				}
			}
		}
	})

	// The flood: each attacker goes through every attack a few times, each
	// on a fresh connection.
	done := make(chan struct{})
	var flood sync.WaitGroup
	var floodConns atomic.Int64
	attackers, rounds := 16, 2
	if testing.Short() {
		attackers, rounds = 8, 1
	}
	for a := 0; a < attackers; a++ {
		flood.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(a), 7))
			for i := a; i < a+rounds*len(attacks); i++ {
				conn, err := net.DialTimeout("tcp", ts.Addr, 5*time.Second)
				if err != nil {
					continue
				}
				floodConns.Add(1)
				_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
				attacks[i%len(attacks)].run(conn, rng)
				_ = conn.Close()
			}
		})
	}

	// The good clients decide until the flood is over: each its own keys,
	// each reply checked exactly. The clock does not move, so the c-th call
	// on a key of burst 1000 leaves 1000-c and resets in c hours.
	const goodClients, keysEach = 8, 10
	var good sync.WaitGroup
	var decided atomic.Int64
	errs := make(chan error, goodClients)
	for g := 0; g < goodClients; g++ {
		good.Go(func() {
			rdb := redis.NewClient(&redis.Options{Addr: ts.Addr, Protocol: 2 + g%2, MaxRetries: -1})
			defer rdb.Close()
			for n := 1; n <= 999*keysEach; n++ {
				select {
				case <-done:
					if n > keysEach {
						return
					}
				default:
				}
				key := fmt.Sprintf("good:%d:%d", g, n%keysEach)
				calls := int64((n-1)/keysEach + 1)
				got, err := rdb.Do(bg, "CL.THROTTLE", key, 999, 1, 3600).Int64Slice()
				want := []int64{0, 1000, 1000 - calls, -1, calls * 3600}
				if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
					errs <- fmt.Errorf("client %d decision %d on %s: %v, %v; want %v", g, n, key, got, err, want)
					return
				}
				decided.Add(1)
			}
		})
	}
	flood.Wait()
	close(done)
	good.Wait()
	close(stopSampling)
	sampler.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	growth := int64(peakHeap.Load()) - int64(baseHeap)
	t.Logf("%d flood connections of %d kinds, %d good decisions meanwhile; heap %d MB before, peak %d MB",
		floodConns.Load(), len(attacks), decided.Load(), baseHeap>>20, peakHeap.Load()>>20)
	require.GreaterOrEqual(t, floodConns.Load(), int64(attackers*len(attacks)), "every attack ran")
	// 16 attackers at once, each costing at most its 4 MiB of replies and
	// a command's worth of input.
	require.Less(t, growth, int64(128<<20), "the heap stayed bounded under the flood")

	for key, tat := range before {
		require.Equal(t, tat, admin.Do("GET", key), "%s is untouched", key)
	}
	require.Equal(t, testkit.Int(victims+goodClients*keysEach), admin.Do("DBSIZE"))
	require.Eventually(t, func() bool {
		return strings.Contains(admin.Do("INFO", "clients"), "\r\nconnected_clients:1\r\n")
	}, 10*time.Second, 10*time.Millisecond, "every other connection is gone")
	require.Less(t, heapInUse()-min(baseHeap, heapInUse()), uint64(16<<20), "and its memory with it")
}
