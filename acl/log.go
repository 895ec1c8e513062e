package acl

import (
	"sync"
	"time"
)

// Context is where a refused command was: Redis's ACL_LOG_CTX_*.
type Context uint8

// The contexts a refusal can have here (no Lua, no modules).
const (
	TopLevel Context = iota
	InMulti
)

// String is the context as ACL LOG names it.
func (c Context) String() string {
	if c == InMulti {
		return "multi"
	}
	return "toplevel"
}

// LogEntry is one entry of the ACL LOG: a refusal, or several alike.
type LogEntry struct {
	// Count is how many refusals the entry stands for.
	Count   int64
	Reason  Reason
	Context Context
	// Object is what was refused: the command's full name, the key, the
	// channel, or for an authentication the command as sent (AUTH, HELLO).
	Object string
	// Username is the user refused, or the user an authentication named.
	Username string
	// ClientInfo is the last refused client's CLIENT INFO line.
	ClientInfo string
	// ID is the entry's number, from 0 at the start; Created is when its
	// first refusal was, Updated its last.
	ID               int64
	Created, Updated time.Time
}

// DefaultLogMaxLen is how many entries the log keeps: Redis's
// acllog-max-len default.
const DefaultLogMaxLen = 128

// logGroupWindow is how close in time a refusal must be to an alike
// entry's last to be counted in it (Redis's
// ACL_LOG_GROUPING_MAX_TIME_DELTA); logGroupScan is how many of the newest
// entries are searched for one.
const (
	logGroupWindow = 60 * time.Second
	logGroupScan   = 10
)

// Log is the ACL LOG: the newest refusals first, alike ones counted in one
// entry, as Redis keeps it, and the INFO counters of refusals by reason.
// It is safe for concurrent use.
type Log struct {
	mu      sync.Mutex
	entries []*LogEntry // newest first
	nextID  int64
	maxLen  int
	denied  [DeniedChannel + 1]int64
}

// NewLog is an empty log keeping at most maxLen entries (0:
// DefaultLogMaxLen).
func NewLog(maxLen int) *Log {
	if maxLen <= 0 {
		maxLen = DefaultLogMaxLen
	}
	return &Log{maxLen: maxLen}
}

// Add records a refusal at now. An entry among the ten newest with the
// same reason, context, object and user, last updated within 60 s of now,
// counts it (its client info and time become this one's) and becomes the
// newest; otherwise a new entry is made, and the oldest dropped past the
// log's length.
func (l *Log) Add(reason Reason, ctx Context, object, username, clientInfo string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.denied[reason]++
	for i, e := range l.entries[:min(len(l.entries), logGroupScan)] {
		d := now.Sub(e.Updated)
		if d < 0 {
			d = -d
		}
		if e.Reason != reason || e.Context != ctx || d > logGroupWindow || e.Object != object || e.Username != username {
			continue
		}
		e.Count++
		e.ClientInfo, e.Updated = clientInfo, now
		copy(l.entries[1:i+1], l.entries[:i])
		l.entries[0] = e
		return
	}
	e := &LogEntry{Count: 1, Reason: reason, Context: ctx, Object: object, Username: username,
		ClientInfo: clientInfo, ID: l.nextID, Created: now, Updated: now}
	l.nextID++
	l.entries = append([]*LogEntry{e}, l.entries...)
	if len(l.entries) > l.maxLen {
		l.entries = l.entries[:l.maxLen]
	}
}

// Entries returns copies of the newest n entries, newest first (all of
// them when there are fewer).
func (l *Log) Entries(n int) []LogEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	n = max(0, min(n, len(l.entries)))
	out := make([]LogEntry, n)
	for i := range out {
		out[i] = *l.entries[i]
	}
	return out
}

// Reset empties the log (ACL LOG RESET); the entry numbers and the
// counters go on.
func (l *Log) Reset() {
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
}

// Denied is how many refusals of each reason were recorded since the
// start: INFO's acl_access_denied_* counters.
func (l *Log) Denied(r Reason) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.denied[r]
}
