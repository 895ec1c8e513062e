// Command conformance plays one random trace of CL.THROTTLE calls against two
// servers, the reference (Redis with the redis-cell module) and redcell, call
// by call, and counts the replies that differ: how far redcell is from being
// a drop-in where it matters most, on keys whose limits change while they are
// in use. Run by hand, never by tests:
//
//	conformance --ref 127.0.0.1:6390 --redcell 127.0.0.1:6379 --calls 3000 --keys 40 --seed 1
//
// Each call goes to the reference, then at once to redcell, on connections of
// their own; calls are spaced by random pauses (mostly none, some up to
// --maxpause), so that time passes as it does under real traffic. The two
// servers read their clocks some tens of microseconds apart, so a reply may
// differ where a duration falls within that of a whole second's rounding
// boundary: such differences are counted apart (skew), by checking whether
// the replies agree once both durations are allowed to move by a millisecond.
//
// Every key's limit is drawn from a few per key (a burst lowered, a tenant
// moved to another plan), changing on one call in --changes; quantities run
// from peeks to above the limit. Emission intervals are whole microseconds,
// where redis-cell computes remaining exactly (docs/commands.md: differences
// from redis-cell). It prints one line:
//
//	calls differ skew
//
// and the first differing calls with both replies.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/redcell/redcell/internal/cliflag"
	"github.com/redcell/redcell/resp"
)

func main() {
	flag.CommandLine.Init("conformance", flag.ContinueOnError)
	ref := flag.String("ref", "127.0.0.1:6390", "the reference server (Redis with redis-cell)")
	under := flag.String("redcell", "127.0.0.1:6379", "the server under test")
	calls := flag.Int("calls", 3000, "calls in the trace")
	keys := flag.Int("keys", 40, "keys the calls go to")
	changes := flag.Int("changes", 10, "one call in this many uses another of its key's limits")
	maxPause := flag.Duration("maxpause", 300*time.Millisecond, "the longest pause between two calls")
	seed := flag.Uint64("seed", 1, "the trace's random seed")
	show := flag.Int("show", 10, "differing calls to print")
	_, rest, err := cliflag.Parse(flag.CommandLine, os.Args[1:])
	switch {
	case errors.Is(err, flag.ErrHelp):
		flag.CommandLine.SetOutput(os.Stdout)
		flag.PrintDefaults()
		return
	case err == nil && len(rest) > 0:
		err = fmt.Errorf("unexpected argument %q", rest[0])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(2)
	}

	a, err := dial(*ref)
	check(err)
	b, err := dial(*under)
	check(err)
	rng := rand.New(rand.NewPCG(*seed, 20))
	prefix := fmt.Sprintf("conformance:%d:%d:", *seed, time.Now().UnixNano())
	limits := make([][]limit, *keys)
	for k := range limits {
		limits[k] = randomLimits(rng)
	}
	differ, skew, shown := 0, 0, 0
	for i := range *calls {
		switch rng.IntN(4) {
		case 0, 1: // back to back
		case 2:
			time.Sleep(time.Duration(rng.Int64N(int64(5 * time.Millisecond))))
		case 3:
			time.Sleep(time.Duration(rng.Int64N(int64(*maxPause))))
		}
		k := rng.IntN(*keys)
		l := limits[k][0]
		if rng.IntN(*changes) == 0 {
			l = limits[k][rng.IntN(len(limits[k]))]
		}
		q := []int64{0, 1, 1, 1, 1, 2, 3, l.burst + 1, l.burst + 2}[rng.IntN(9)]
		args := []string{"CL.THROTTLE", prefix + strconv.Itoa(k), itoa(l.burst), itoa(l.count), itoa(l.period), itoa(q)}
		ra, err := a.do(args)
		check(err)
		rb, err := b.do(args)
		check(err)
		if ra == rb {
			continue
		}
		if nearlyEqual(ra, rb) {
			skew++
			continue
		}
		differ++
		if shown < *show {
			shown++
			fmt.Printf("call %d: %v\n  ref     %s\n  redcell %s\n", i, args, ra, rb)
		}
	}
	fmt.Printf("calls %d differ %d skew %d\n", *calls, differ, skew)
}

type limit struct{ burst, count, period int64 }

// randomLimits draws one to three limits for a key, each with an emission
// interval of whole microseconds.
func randomLimits(rng *rand.Rand) []limit {
	out := make([]limit, 1+rng.IntN(3))
	for i := range out {
		for {
			l := limit{
				burst:  []int64{0, 1, 2, 4, 5, 9, 15, 99}[rng.IntN(8)],
				count:  []int64{1, 2, 5, 10, 12, 30, 60, 100}[rng.IntN(8)],
				period: []int64{1, 2, 5, 10, 60, 300}[rng.IntN(6)],
			}
			if l.period*int64(time.Second)/l.count%1000 == 0 {
				out[i] = l
				break
			}
		}
	}
	return out
}

// nearlyEqual reports whether two replies agree but for a retry_after or
// reset_after one apart (a duration the two clocks rounded on either side of
// a boundary) or a remaining one apart (a TAT a microsecond either side of an
// interval's end).
func nearlyEqual(a, b string) bool {
	var x, y [5]int64
	if _, err := fmt.Sscan(a, &x[0], &x[1], &x[2], &x[3], &x[4]); err != nil {
		return false
	}
	if _, err := fmt.Sscan(b, &y[0], &y[1], &y[2], &y[3], &y[4]); err != nil {
		return false
	}
	if x[0] != y[0] || x[1] != y[1] {
		return false
	}
	for i := 2; i < 5; i++ {
		if d := x[i] - y[i]; d < -1 || d > 1 {
			return false
		}
	}
	return true
}

// conn is one connection to a server; a reply is one line of text (the
// integers of an array space-separated, an error as its text).
type conn struct {
	c net.Conn
	r *bufio.Reader
}

func dial(addr string) (*conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &conn{c: c, r: bufio.NewReader(c)}, nil
}

func (c *conn) do(args []string) (string, error) {
	if _, err := c.c.Write(resp.AppendCommand(nil, args...)); err != nil {
		return "", err
	}
	reply, err := resp.ReadReply(c.r)
	var re resp.ReplyError
	if errors.As(err, &re) {
		return re.Error(), nil
	}
	if err != nil {
		return "", err
	}
	ints, ok := reply.([]any)
	if !ok {
		return fmt.Sprint(reply), nil
	}
	out := ""
	for i, n := range ints {
		if i > 0 {
			out += " "
		}
		out += fmt.Sprint(n)
	}
	return out, nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(1)
	}
}
