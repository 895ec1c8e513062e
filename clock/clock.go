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
	return &Clock{mono0: nanotime(), wall0: wall().UnixNano(), wall: wall}
}

// Now returns the wall-clock time at the start plus the monotonic time
// elapsed since, as a Time without a monotonic reading. It costs one read of
// the monotonic clock, less than time.Now, which reads both clocks.
func (c *Clock) Now() time.Time { return time.Unix(0, c.wall0+nanotime()-c.mono0) }

// WallOffset returns how far the system's wall clock is ahead of Now: zero
// unless it has been stepped since the start. A saved instant i is a
// wall-clock instant i + WallOffset(). Offsets under stepThreshold are
// reported as zero: the two clocks are read one after the other, which alone
// parts them by nanoseconds, and a saved TAT must read back exactly.
func (c *Clock) WallOffset() time.Duration {
	off := time.Duration(c.wall().UnixNano() - c.Now().UnixNano())
	if -stepThreshold < off && off < stepThreshold {
		return 0
	}
	return off
}

// stepThreshold is the least difference between the wall clock and Now
// taken as a step: far below what moves any rate limit's answer, far above
// the time between two clock reads.
const stepThreshold = time.Millisecond
