// Package clock is redcell's time source: the wall clock as it read when the
// process started, carried forward by the monotonic clock, so that it never
// steps.
//
// A rate limiter compares instants: a key's TAT with now. If now followed the
// system's wall clock, an NTP correction or a resumed VM stepping it back an
// hour would limit every live key for that hour, and a step forward would
// refill every bucket at once. Decisions therefore use Clock.Now, which moves
// only as fast as real time passes. The wall clock matters only at the edges
// of the process, where instants are written to disk or read back: WallOffset
// says how far the system clock has moved away from Now since the start, so
// that what is saved is a wall-clock instant again.
package clock

import (
	"time"
	_ "unsafe" // for go:linkname
)

// nanotime is the runtime's monotonic clock, the one time.Since reads. It is
// read directly because Now is on every command's path: time.Since and
// Time.Add on a Time with a monotonic reading cost about 140 instructions a
// call more (measured with callgrind on the connection benchmark).
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// Clock is a wall clock that never steps. Its zero value is not usable; build
// one with New. It is safe for concurrent use.
type Clock struct {
	mono0 int64            // nanotime at the start
	wall0 int64            // the wall clock then, Unix nanoseconds
	wall  func() time.Time // the system's wall clock: time.Now, or a test's
}

// New returns a Clock anchored at the system's wall clock now.
func New() *Clock { return WithWall(time.Now) }

// WithWall returns a Clock anchored at wall's reading now, whose WallOffset
// reads wall: for tests and simulations of a wall clock that steps.
func WithWall(wall func() time.Time) *Clock {
	w, mono, _ := readWall(wall)
	return &Clock{mono0: mono, wall0: w, wall: wall}
}

// readWall reads wall between two reads of the monotonic clock and returns
// it with the monotonic instant it was taken at (their midpoint) and how far
// apart the two were: the reading's uncertainty. A thread descheduled
// between two reads (a loaded machine, a GC pause) parts them by
// milliseconds, so it reads again, up to wallTries times, and keeps the
// tightest reading.
func readWall(wall func() time.Time) (w, mono int64, spread time.Duration) {
	spread = -1
	for range wallTries {
		m1 := nanotime()
		r := wall().UnixNano()
		m2 := nanotime()
		if d := time.Duration(m2 - m1); spread < 0 || d < spread {
			w, mono, spread = r, m1+(m2-m1)/2, d
		}
		if spread <= tightRead {
			break
		}
	}
	return w, mono, spread
}

const (
	// wallTries bounds the reads of readWall.
	wallTries = 20
	// tightRead is an uncertainty readWall takes at once: a few
	// microseconds, what two clock reads take when nothing intervenes.
	tightRead = 20 * time.Microsecond
)

// Now returns the wall-clock time at the start plus the monotonic time
// elapsed since, as a Time without a monotonic reading. It costs one read of
// the monotonic clock, less than time.Now, which reads both clocks.
func (c *Clock) Now() time.Time { return time.Unix(0, c.wall0+nanotime()-c.mono0) }

// Wall reads the system's wall clock (or the one WithWall was given): what
// instants written to disk are measured against.
func (c *Clock) Wall() time.Time { return c.wall() }

// WallOffset returns how far the system's wall clock is ahead of Now: zero
// unless it has been stepped since the start. A saved instant i is a
// wall-clock instant i + WallOffset().
//
// A saved TAT must read back exactly, so small offsets are reported as
// zero: under stepThreshold, or under four times the uncertainty of the
// reading (readWall's, here and at the anchor). A difference that size is
// the time between clock reads, not a step: once it took a thread
// descheduled between two reads on a loaded machine to shift every saved
// TAT by milliseconds.
func (c *Clock) WallOffset() time.Duration {
	w, mono, spread := readWall(c.wall)
	off := time.Duration(w - (c.wall0 + mono - c.mono0))
	if limit := max(stepThreshold, 4*spread); -limit < off && off < limit {
		return 0
	}
	return off
}

// stepThreshold is the least difference between the wall clock and Now
// taken as a step: far below what moves any rate limit's answer, far above
// the time between two clock reads that nothing parts.
const stepThreshold = time.Millisecond
