package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/storage"
)

// newPrefetchingServer is a server on the fixed clock t0 whose store holds
// enough keys, key:0 to key:39999 each decided once, that a pipeline of
// decisions has its keys prefetched.
func newPrefetchingServer(t testing.TB) *Server {
	srv := New(Config{Now: func() time.Time { return t0 }}, storage.New(storage.Config{}))
	rate, err := gcra.NewRate(10, 1, 60, 1)
	require.NoError(t, err)
	for i := range 40_000 {
		_, err := srv.store.Throttle(fmt.Appendf(nil, "key:%d", i), rate, gcra.InstantOf(t0))
		require.NoError(t, err)
	}
	require.True(t, srv.store.Prefetching())
	return srv
}

// A pipeline whose keys are prefetched gets the replies it would get
// without: every decision on its own key, existing or new, with other
// commands among them, however the input is cut into reads (which makes the
// reader forget what it peeked at).
func TestPrefetchedPipelineRepliesAsAnyOther(t *testing.T) {
	var input, want strings.Builder
	hits := map[string]int{}
	for i := range 48 {
		key := fmt.Sprintf("key:%d", i%7*5000)
		if i%3 == 2 {
			key = fmt.Sprintf("new:%d", i%5)
		} else if _, ok := hits[key]; !ok {
			hits[key] = 1 // decided once when the store was filled
		}
		hits[key]++
		input.WriteString(testkit.Command("CL.THROTTLE", key, "10", "1", "60"))
		fmt.Fprintf(&want, "*5\r\n:0\r\n:11\r\n:%d\r\n:-1\r\n:%d\r\n", 11-hits[key], 60*hits[key])
		if i%11 == 10 {
			input.WriteString(testkit.Command("PING") + "PING\r\n")
			want.WriteString("+PONG\r\n+PONG\r\n")
		}
	}
	for _, chunk := range []int{1, 7, 100, 4096, 1 << 20} {
		srv := newPrefetchingServer(t)
		sc := &scriptConn{in: []byte(input.String()), chunk: chunk}
		srv.eng.ServeConn(sc)
		require.Equal(t, want.String(), sc.written.String(), "reads of %d bytes", chunk)
	}
}

// A pipelined batch whose keys are prefetched allocates nothing either.
func TestPrefetchedBatchAllocatesNothing(t *testing.T) {
	srv := newPrefetchingServer(t)
	var batch strings.Builder
	for i := range 16 {
		batch.WriteString(testkit.Command("CL.THROTTLE", fmt.Sprintf("key:%d", i*2500), "100", "10", "1"))
	}
	lc := &loopConn{batch: []byte(batch.String())}
	st, err := srv.eng.NewStepper(lc)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(100, func() { serveBatch(t, st) })
	require.Zero(t, allocs, "allocations per batch of 16 CL.THROTTLE")
	require.Positive(t, lc.written)
}
