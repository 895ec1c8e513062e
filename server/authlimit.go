package server

import (
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/redcell/redcell/engine"
	"github.com/redcell/redcell/gcra"
)

// Wrong passwords are slowed per client address; right ones never are. A
// right password (AUTH, HELLO ... AUTH) is checked and answered at once and
// charges nothing, whatever the address has failed before and however many
// other addresses fail: an application is never locked out by a neighbour
// behind the same NAT, or by a flood. A wrong one is charged to its
// address's failures, which redcell's own GCRA budgets: authFailBurst at
// once, then authFailPerSecond a second. Within the budget WRONGPASS is
// answered at once, as Redis answers it; past it, late (authDelay), by a
// delay that doubles with the failures over the budget not yet earned back,
// up to authDelayMax. Nothing else is refused. Redis has no such limit.
//
// The wait is on the connection's own goroutine, never on an event loop
// (client.answerLate); the connection's later commands wait behind it, and
// CLIENT KILL or the server's Close end it at once.
//
// What a guesser gets from one address: 10 answers at once, then one
// connection waiting for each answer gets about 3 a second (its delays
// settle near a third of a second), and N connections about N a second
// once each answer is authDelayMax late. One that gives up on a slow answer
// and counts it wrong needs a new connection per guess, each held by the
// server for the delay: maxclients bounds it.
const (
	authFailBurst     = 10
	authFailPerSecond = 3
	// authDelayFirst is the delay of an address's first failure over its
	// budget; each further one doubles it, up to authDelayMax.
	authDelayFirst = 100 * time.Millisecond
	authDelayMax   = time.Second
	// authMaxExcess is the most failures over its budget an address is
	// charged: the first whose delay is authDelayMax. Failures beyond it
	// are answered authDelayMax late and charge nothing more, so an
	// address that stops has its whole budget back within
	// (authFailBurst+authMaxExcess)/authFailPerSecond, 5 s.
	authMaxExcess = 5
	// authFailMaxAddrs bounds the addresses remembered at once. An entry
	// lives at most 5 s after its last failure, so only a flood from more
	// addresses than this within that time fills the table; then the
	// addresses it has no room for share one entry, so their wrong
	// passwords are answered late as one address's, while the addresses
	// already remembered keep their own, and right passwords are answered
	// at once from everywhere. Some 80 bytes an entry: 5 MB at most.
	authFailMaxAddrs = 1 << 16
	// authSweepMin is the table size below which expired entries are left
	// for later.
	authSweepMin = 1024
)

// authOverflow is the entry of the addresses beyond authFailMaxAddrs; no
// address's key (authKey) is "*".
const authOverflow = "*"

// authDelay is how late the excess-th failure over an address's budget
// is answered (excess >= 1).
func authDelay(excess int64) time.Duration {
	if excess >= authMaxExcess {
		return authDelayMax
	}
	return min(authDelayFirst<<(excess-1), authDelayMax)
}

// authKey is what an address's failures are charged to: its IP address
// whatever the port, an IPv4 address mapped into IPv6 as IPv4, and an IPv6
// address by its /64, which a single host or site is given whole (keyed by
// address, a guesser with a /64 would have 2^64 budgets). An address that
// is not IP (a Unix socket's) is its own key.
func authKey(addr string) string {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		return netip.PrefixFrom(ip, 64).Masked().String()
	}
	return ip.String()
}

// authLimiter remembers, per address (authKey), the TAT of its failed
// attempts. It is safe for concurrent use. Entries whose TAT has passed are
// worth nothing and are dropped: when the table has doubled since the last
// sweep, or before an address would be refused room.
type authLimiter struct {
	rate gcra.Rate // one attempt
	// maxAhead is the furthest ahead of now a TAT is set: authMaxExcess
	// failures over the budget.
	maxAhead gcra.Instant

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
	return &authLimiter{
		rate:     rate,
		maxAhead: gcra.Instant(rate.Tolerance + authMaxExcess*rate.EmissionInterval),
		tats:     make(map[string]gcra.Instant),
		sweepAt:  authSweepMin,
	}
}

// fail charges a failed attempt from addr (host:port) at now, and returns
// how late it is to be answered: 0 within the address's budget.
func (l *authLimiter) fail(addr string, now gcra.Instant) time.Duration {
	key := authKey(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	tat, known := l.tats[key]
	if !known {
		if len(l.tats) >= l.sweepAt && now >= l.noSweep {
			l.sweep(now)
		}
		if len(l.tats) >= authFailMaxAddrs {
			key = authOverflow
			tat = l.tats[key]
		}
	}
	res, newTAT, _, err := gcra.Decide(l.rate, tat, now)
	if err == nil && !res.Limited {
		l.tats[key] = newTAT
		return 0
	}
	// Over the budget: charged all the same, so that a guesser that goes
	// on is answered later and later, up to authMaxExcess failures over
	// it (a clock that stepped back is brought back there too).
	inc := gcra.Instant(l.rate.EmissionInterval)
	newTAT = min(max(tat, now)+inc, now+l.maxAhead)
	l.tats[key] = newTAT
	over := newTAT - now - gcra.Instant(l.rate.Tolerance)
	return authDelay(int64((over + inc - 1) / inc))
}

// sweep drops the entries whose TAT has passed. If the table is still more
// than half full it is not swept again before all its entries have expired.
func (l *authLimiter) sweep(now gcra.Instant) {
	for key, tat := range l.tats {
		if tat <= now {
			delete(l.tats, key)
		}
	}
	l.sweepAt = max(authSweepMin, 2*len(l.tats))
	if l.sweepAt > authFailMaxAddrs {
		l.sweepAt = authFailMaxAddrs
		l.noSweep = now + l.maxAhead
	}
}

// size returns how many entries the limiter holds.
func (l *authLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.tats)
}

// answerLate makes the reply of c's running command, and those of its later
// commands, wait d more: a wrong password past its address's budget. It
// waits at once on the connection's own goroutine (waitLate); inside EXEC
// once EXEC has released its keys (cmdExec), which others may be waiting
// for; on an event loop, which serves other connections, once the
// connection has left it for a goroutine of its own (runConn).
func (c *client) answerLate(d time.Duration) {
	c.session.lateBy += d
	if !c.inExec() {
		c.waitLate()
	}
}

// waitLate waits out what answerLate owes, if anything, on the connection's
// own goroutine; on an event loop it has the connection leave after the
// running command, and runConn calls it again from there. A client killed
// meanwhile runs nothing more.
func (c *client) waitLate() {
	d := c.session.lateBy
	if d <= 0 {
		return
	}
	if c.conn.OnLoop() {
		c.conn.Need(engine.NeedGoroutineAfter)
		return
	}
	c.session.lateBy = 0
	c.waiting.Store(true) // CLIENT LIST's flags=b, as for a command waiting on CLIENT PAUSE
	alive := c.srv.sleep(d, c.conn.Done())
	c.waiting.Store(false)
	if !alive || c.killed() {
		c.conn.Need(engine.NeedClose)
	}
}

// sleep waits d, or until done is closed, and reports whether d passed:
// Server.sleep, which tests replace.
func sleep(d time.Duration, done <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}
