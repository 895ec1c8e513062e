package server

import (
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// PTTL rounds the nanoseconds left to the nearest millisecond; TTL rounds
// those milliseconds to seconds as Redis does, (ms+500)/1000.
func TestTTLRounding(t *testing.T) {
	var now atomic.Int64
	now.Store(t0.UnixNano())
	tc := newTestClient(t, Config{Now: func() time.Time { return time.Unix(0, now.Load()) }})
	if got := tc.do("CL.THROTTLE", "k", "0", "1", "10"); got != intsReply(0, 1, 0, -1, 10) {
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

// parseScanReply reads "*2\r\n$n\r\ncursor\r\n*m\r\n$..." into its parts.
func parseScanReply(t *testing.T, reply string) (string, []string) {
	t.Helper()
	var cursor string
	var n int
	rest := reply
	if _, err := fmt.Sscanf(rest, "*2\r\n$%d\r\n", &n); err != nil {
		t.Fatalf("bad SCAN reply %q: %v", reply, err)
	}
	rest = rest[len("*2\r\n$")+len(strconv.Itoa(n))+2:]
	cursor, rest = rest[:n], rest[n+2:]
	var m int
	if _, err := fmt.Sscanf(rest, "*%d\r\n", &m); err != nil {
		t.Fatalf("bad SCAN reply %q: %v", reply, err)
	}
	rest = rest[len("*")+len(strconv.Itoa(m))+2:]
	keys := make([]string, 0, m)
	for i := 0; i < m; i++ {
		var l int
		if _, err := fmt.Sscanf(rest, "$%d\r\n", &l); err != nil {
			t.Fatalf("bad SCAN reply %q: %v", reply, err)
		}
		rest = rest[len("$")+len(strconv.Itoa(l))+2:]
		keys = append(keys, rest[:l])
		rest = rest[l+2:]
	}
	if rest != "" {
		t.Fatalf("trailing bytes in SCAN reply %q", reply)
	}
	return cursor, keys
}
