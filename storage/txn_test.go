package storage

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
)

// A Txn holds its keys' shards: another goroutine's decision on one of its
// keys waits until Unlock, and then sees every change the Txn made; a key
// of a shard it does not hold is decided meanwhile.
func TestTxnHoldsItsKeysShardsUntilUnlock(t *testing.T) {
	s := New(Config{Shards: 64})
	r := mustRate(t, 1, 1, 60, 1)
	var other []byte
	for i := 0; ; i++ {
		other = fmt.Appendf(nil, "other%d", i)
		if s.shardIndex(other) != s.shardIndex([]byte("a")) && s.shardIndex(other) != s.shardIndex([]byte("b")) {
			break
		}
	}
	tx := s.Lock([][]byte{[]byte("a"), []byte("b")}, false)
	require.ElementsMatch(t, uniq(s.shardIndex([]byte("a")), s.shardIndex([]byte("b"))), tx.HeldShards())

	done := make(chan gcra.Result)
	go func() {
		res, err := s.Throttle([]byte("a"), r, t0)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	_, err := s.Throttle(other, r, t0) // not held: decided at once
	require.NoError(t, err)
	for i := 0; i < 2; i++ {
		res, err := tx.Throttle([]byte("a"), r, t0)
		require.NoError(t, err)
		require.False(t, res.Limited)
	}
	select {
	case <-done:
		t.Fatal("a decision on a held key ran inside the transaction")
	case <-time.After(20 * time.Millisecond):
	}
	tx.Unlock()
	res := <-done
	require.True(t, res.Limited, "it ran after the transaction's two calls, and saw them")
}

func uniq(xs ...int) []int {
	if len(xs) == 2 && xs[0] == xs[1] {
		return xs[:1]
	}
	return xs
}

// Two transactions over overlapping keys, named in any order, never
// deadlock: shards are always locked in ascending order.
func TestTxnsOverlappingKeysNeverDeadlock(t *testing.T) {
	s := New(Config{Shards: 16})
	r := mustRate(t, 1000000, 1, 1, 1)
	keys := make([][]byte, 8)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "k%d", i)
	}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				a, b := keys[(w+i)%8], keys[(w*3+i)%8]
				tx := s.Lock([][]byte{a, b}, i%50 == 0)
				_, _ = tx.Throttle(a, r, t0)
				_, _ = tx.Throttle(b, r, t0)
				tx.Unlock()
			}
		}(w)
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		t.Fatal("deadlock")
	}
	total := int64(0)
	for _, k := range keys {
		tat, _, _ := s.Get(k, t0)
		total += int64(tat-t0) / int64(r.EmissionInterval)
	}
	require.Equal(t, int64(8*500*2), total, "every decision of every transaction counted once")
}

// A Txn holding every shard serves the calls over the whole keyspace
// without taking a lock (it would wait on itself otherwise).
func TestTxnOverEveryShard(t *testing.T) {
	s := New(Config{Shards: 4, TrackChanges: true})
	r := mustRate(t, 0, 1, 60, 1)
	for i := 0; i < 10; i++ {
		_, _ = s.Throttle(fmt.Appendf(nil, "k%d", i), r, t0)
	}
	tx := s.Lock(nil, true)
	require.Equal(t, 10, tx.Len())
	n := 0
	tx.Each(t0, func([]byte, gcra.Instant) { n++ })
	require.Equal(t, 10, n)
	require.Equal(t, 10, tx.PendingChanges())
	require.Greater(t, tx.MeasureMemory(), int64(0))
	require.Equal(t, uint64(0), tx.Scan(0, 100, t0, func([]byte, gcra.Instant) {}))
	tx.Clear()
	require.Equal(t, 0, tx.Len())
	tx.Unlock()
	require.Equal(t, 0, s.Len())
}
