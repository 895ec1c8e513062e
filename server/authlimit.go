package server

import (
	"net"
	"sync"

	"github.com/redcell/redcell/gcra"
)

// Failed AUTH attempts are rate-limited by client IP address with redcell's
// own GCRA: an address may fail authFailBurst times at once, and earns back
// authFailPerSecond attempts a second. While it has none left, AUTH and
// HELLO ... AUTH from it answer errAuthLimited without looking at the
// password, so a password cannot be guessed faster than that from one
// address, however many connections it opens. Redis has no such limit.
//
// Each attempt is charged before the password is checked and given back if
// it was right, so concurrent connections cannot race past the limit, and a
// right password charges nothing.
const (
	authFailBurst     = 10
	authFailPerSecond = 3
	// authFailMaxAddrs bounds the addresses remembered at once. An entry
	// lives at most the burst's refill time (3.3 s) after its last failure,
	// so only a flood from more addresses than this within that time fills
	// the table; then the addresses it has no room for share one entry, so
	// the flood is limited as one address while the addresses already
	// remembered keep their own. Some 80 bytes an entry: 5 MB at most.
	authFailMaxAddrs = 1 << 16
	// authSweepMin is the table size below which expired entries are left
	// for later.
	authSweepMin = 1024
)

// authOverflow is the entry of the addresses beyond authFailMaxAddrs; no
// address is empty.
const authOverflow = ""

// authLimiter remembers, per address, the TAT of its failed attempts. It is
// safe for concurrent use. Entries whose TAT has passed are worth nothing
// and are dropped: when the table has doubled since the last sweep, or
// before an address would be refused room.
type authLimiter struct {
	rate gcra.Rate // one attempt

	mu      sync.Mutex
	tats    map[string]gcra.Instant
	sweepAt int          // sweep when the table reaches this size...
	noSweep gcra.Instant // ...unless the last sweep found it full of live entries, until then
}

func newAuthLimiter() *authLimiter {
	rate, err := gcra.NewRate(authFailBurst-1, authFailPerSecond, 1, 1)
	if err != nil {
		panic(err) // constants
	}
	return &authLimiter{rate: rate, tats: make(map[string]gcra.Instant), sweepAt: authSweepMin}
}

// take charges one attempt to addr's IP at now. It reports whether the
// attempt is allowed, and the entry charged, for refund.
func (l *authLimiter) take(addr string, now gcra.Instant) (entry string, ok bool) {
	ip := addr
	if host, _, err := net.SplitHostPort(addr); err == nil {
		ip = host
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	tat, known := l.tats[ip]
	if !known {
		if len(l.tats) >= l.sweepAt && now >= l.noSweep {
			l.sweep(now)
		}
		if len(l.tats) >= authFailMaxAddrs {
			ip = authOverflow
			tat = l.tats[ip]
		}
	}
	res, newTAT, store, err := gcra.Decide(l.rate, tat, now)
	if err != nil || res.Limited {
		return ip, false
	}
	if store {
		l.tats[ip] = newTAT
	}
	return ip, true
}

// refund gives back the attempt take charged to entry: the password was
// right.
func (l *authLimiter) refund(entry string, now gcra.Instant) {
	l.mu.Lock()
	defer l.mu.Unlock()
	tat, ok := l.tats[entry]
	if !ok {
		return
	}
	if tat -= gcra.Instant(l.rate.Increment); tat <= now {
		delete(l.tats, entry)
		return
	}
	l.tats[entry] = tat
}

// sweep drops the entries whose TAT has passed. If the table is still more
// than half full it is not swept again before all its entries have expired.
func (l *authLimiter) sweep(now gcra.Instant) {
	for ip, tat := range l.tats {
		if tat <= now {
			delete(l.tats, ip)
		}
	}
	l.sweepAt = max(authSweepMin, 2*len(l.tats))
	if l.sweepAt > authFailMaxAddrs {
		l.sweepAt = authFailMaxAddrs
		l.noSweep = now + gcra.Instant(l.rate.Tolerance)
	}
}

// size returns how many entries the limiter holds.
func (l *authLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.tats)
}
