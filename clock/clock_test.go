package clock

import (
	"testing"
	"time"
)

func TestNowFollowsTheWallClockAtStartAndNeverGoesBack(t *testing.T) {
	before := time.Now()
	c := New()
	now := c.Now()
	if now.Before(before) {
		t.Fatalf("Now %v is before the wall clock at start %v", now, before)
	}
	prev := now
	for i := 0; i < 1000; i++ {
		n := c.Now()
		if n.Before(prev) {
			t.Fatalf("Now went back: %v after %v", n, prev)
		}
		prev = n
	}
	// Without a step the offset is exactly zero, however far apart the
	// two reads fall, so that a TAT saved and loaded back is unchanged.
	for i := 0; i < 1000; i++ {
		if off := c.WallOffset(); off != 0 {
			t.Fatalf("WallOffset = %v without a step", off)
		}
	}
}

// A wall clock stepped an hour forward after the start: Now does not move
// with it, and the offset shows the step.
func TestWallOffsetShowsAStep(t *testing.T) {
	var step time.Duration
	c := WithWall(func() time.Time { return time.Now().Add(step) })
	step = time.Hour
	if off := c.WallOffset(); off < time.Hour-time.Millisecond || off > time.Hour+time.Millisecond {
		t.Fatalf("WallOffset = %v, want about 1h", off)
	}
	if d := time.Since(c.Now()); d < -time.Millisecond || d > time.Millisecond {
		t.Fatalf("Now is %v off the unstepped clock", d)
	}
}

// A clock started while the wall clock ran 48 hours fast reads 48 hours
// fast, and goes on at the monotonic clock's pace.
func TestAClockStartedOnAFastWallClockKeepsItsPace(t *testing.T) {
	c := WithWall(func() time.Time { return time.Now().Add(48 * time.Hour) })
	a := c.Now()
	if d := time.Until(a); d < 48*time.Hour-time.Millisecond || d > 48*time.Hour+time.Millisecond {
		t.Fatalf("Now is %v ahead, want 48h", d)
	}
	time.Sleep(10 * time.Millisecond) // real time must pass for the pace to show
	if d := c.Now().Sub(a); d < 10*time.Millisecond || d > time.Second {
		t.Fatalf("10ms later Now moved %v", d)
	}
}

// A wall clock read late, as when the thread is descheduled between the
// reads on a loaded machine: neither the anchor nor WallOffset takes the
// delay for a step (it once shifted every saved TAT by milliseconds).
func TestAWallClockReadLateIsNoStep(t *testing.T) {
	calls := 0
	late := func() time.Time {
		calls++
		if calls%3 != 0 {
			time.Sleep(3 * time.Millisecond) // descheduled around the read
		}
		return time.Now()
	}
	c := WithWall(late)
	for i := 0; i < 50; i++ {
		if off := c.WallOffset(); off != 0 {
			t.Fatalf("WallOffset = %v for a wall clock read late, not stepped", off)
		}
	}
	if d := time.Since(c.Now()); d < -time.Millisecond || d > time.Millisecond {
		t.Fatalf("Now is %v off the wall clock: the anchor took a late read", d)
	}
}

// A wall clock that is always read late, and by more than the threshold,
// cannot be told from a step: WallOffset says zero rather than shift what
// is saved by a guess.
func TestAnUncertainReadingIsNoStep(t *testing.T) {
	c := WithWall(func() time.Time { time.Sleep(2 * time.Millisecond); return time.Now() })
	if off := c.WallOffset(); off != 0 {
		t.Fatalf("WallOffset = %v from readings 2ms uncertain", off)
	}
}
