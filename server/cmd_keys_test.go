package server

import (
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit"
)

// PTTL rounds the nanoseconds left to the nearest millisecond; TTL rounds
// those milliseconds to seconds as Redis does, (ms+500)/1000.
func TestTTLRounding(t *testing.T) {
	var now atomic.Int64
	now.Store(t0.UnixNano())
	tc := newTestClient(t, Config{Now: func() time.Time { return time.Unix(0, now.Load()) }})
	if got := tc.do("CL.THROTTLE", "k", "0", "1", "10"); got != testkit.Ints(0, 1, 0, -1, 10) {
		t.Fatalf("setup: %q", got)
	}
	tat := t0.Add(10 * time.Second)
	for _, c := range []struct {
		left      time.Duration
		pttl, ttl int64
	}{
		{10 * time.Second, 10000, 10},
		{9500 * time.Millisecond, 9500, 10},
		{9499*time.Millisecond + 600*time.Microsecond, 9500, 10}, // 9499.6 ms
		{9499*time.Millisecond + 400*time.Microsecond, 9499, 9},  // 9499.4 ms
		{500 * time.Microsecond, 1, 0},
		{499 * time.Microsecond, 0, 0},
		{1, 0, 0},
		{0, -2, -2},
	} {
		now.Store(tat.Add(-c.left).UnixNano())
		if got := tc.do("PTTL", "k"); got != ":"+strconv.FormatInt(c.pttl, 10)+"\r\n" {
			t.Errorf("PTTL with %v left = %q want %d", c.left, got, c.pttl)
		}
		if got := tc.do("TTL", "k"); got != ":"+strconv.FormatInt(c.ttl, 10)+"\r\n" {
			t.Errorf("TTL with %v left = %q want %d", c.left, got, c.ttl)
		}
	}
}

func TestMatching(t *testing.T) {
	keys := []string{"user:1", "user:2", "admin:1"}
	for _, c := range []struct {
		pattern []byte
		want    []string
	}{
		{nil, keys},
		{[]byte("*"), keys},
		{[]byte("user:*"), []string{"user:1", "user:2"}},
		{[]byte("nope"), nil},
	} {
		var got []string
		for _, k := range keys {
			if matches(c.pattern, []byte(k)) {
				got = append(got, k)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%q matches %v, want %v", c.pattern, got, c.want)
		}
	}
}

// SCAN through the dispatcher visits every key once, whatever COUNT.
func TestScanCursorWalk(t *testing.T) {
	tc := newTestClient(t, Config{})
	want := map[string]bool{}
	for i := 0; i < 300; i++ {
		k := fmt.Sprintf("k%d", i)
		want[k] = true
		tc.do("CL.THROTTLE", k, "0", "1", "60")
	}
	for _, count := range []string{"1", "7", "1000"} {
		seen := map[string]int{}
		cursor := "0"
		for calls := 0; ; calls++ {
			if calls > 1000 {
				t.Fatalf("COUNT %s: SCAN did not finish", count)
			}
			var keys []string
			cursor, keys = parseScanReply(t, tc.do("SCAN", cursor, "COUNT", count))
			for _, k := range keys {
				seen[k]++
			}
			if cursor == "0" {
				break
			}
		}
		if len(seen) != len(want) {
			t.Errorf("COUNT %s: saw %d keys want %d", count, len(seen), len(want))
		}
		for k, n := range seen {
			if !want[k] || n != 1 {
				t.Errorf("COUNT %s: key %q seen %d times", count, k, n)
			}
		}
	}
}

// parseScanReply reads SCAN's reply, "*2\r\n$n\r\ncursor\r\n*m\r\n$...", into
// its parts: an array of the cursor and the keys, every string a bulk one.
func parseScanReply(t *testing.T, reply string) (string, []string) {
	t.Helper()
	v, err := testkit.Parse(reply)
	if err != nil {
		t.Fatalf("bad SCAN reply %q: %v", reply, err)
	}
	if v.Kind != '*' || len(v.Elems) != 2 || v.Elems[0].Kind != '$' || v.Elems[1].Kind != '*' {
		t.Fatalf("bad SCAN reply %q", reply)
	}
	keys := make([]string, 0, len(v.Elems[1].Elems))
	for _, k := range v.Elems[1].Elems {
		if k.Kind != '$' {
			t.Fatalf("bad SCAN reply %q", reply)
		}
		keys = append(keys, k.Text)
	}
	return v.Elems[0].Text, keys
}
