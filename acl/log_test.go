package acl

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// Alike refusals within a minute are one entry, counted; others are
// entries of their own, newest first, at most the log's length.
func TestLog(t *testing.T) {
	l := NewLog(3)
	l.Add(DeniedCommand, TopLevel, "flushall", "app", "id=1", t0)
	l.Add(DeniedKey, TopLevel, "other", "app", "id=2", t0.Add(time.Second))
	l.Add(DeniedCommand, TopLevel, "flushall", "app", "id=3", t0.Add(30*time.Second))
	got := l.Entries(10)
	require.Len(t, got, 2)
	require.Equal(t, LogEntry{Count: 2, Reason: DeniedCommand, Context: TopLevel, Object: "flushall", Username: "app",
		ClientInfo: "id=3", ID: 0, Created: t0, Updated: t0.Add(30 * time.Second)}, got[0])
	require.Equal(t, int64(1), got[1].ID)

	// 61 s after its last: a new entry. Another context, another entry.
	l.Add(DeniedCommand, TopLevel, "flushall", "app", "id=4", t0.Add(91*time.Second))
	l.Add(DeniedCommand, InMulti, "flushall", "app", "id=5", t0.Add(91*time.Second))
	got = l.Entries(10)
	require.Len(t, got, 3, "the oldest dropped past the length")
	require.Equal(t, []int64{3, 2, 0}, []int64{got[0].ID, got[1].ID, got[2].ID})
	require.Equal(t, "multi", got[0].Context.String())
	require.Len(t, l.Entries(1), 1)
	require.Empty(t, l.Entries(-1))

	require.Equal(t, int64(4), l.Denied(DeniedCommand))
	require.Equal(t, int64(1), l.Denied(DeniedKey))
	l.Reset()
	require.Empty(t, l.Entries(10))
	require.Equal(t, int64(4), l.Denied(DeniedCommand), "RESET keeps the counters")
	l.Add(DeniedAuth, TopLevel, "AUTH", "nobody", "id=6", t0)
	require.Equal(t, int64(4), l.Entries(1)[0].ID, "entry numbers go on")
	require.Equal(t, "auth", l.Entries(1)[0].Reason.String())
}
