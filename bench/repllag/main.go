// Command repllag measures for bench/replication.sh what redis-benchmark and
// redis-cli cannot: how long a decision made on a master takes to reach its
// replica, how far behind in bytes the replica runs, and how long a full
// resynchronization takes. Run by hand, never by tests.
//
//	repllag fill   --addr 127.0.0.1:6390 -n 1000000
//	repllag lag    --master 127.0.0.1:6390 --replica 127.0.0.1:6391 -- redis-benchmark ...
//	repllag resync --master 127.0.0.1:6390 --replica 127.0.0.1:6391
//
// Flags read as redis-benchmark's: one dash for a letter, two for a word
// (one dash is accepted too).
//
// fill makes exactly -n keys, fill:0 to fill:<n-1>, each by one
// CL.THROTTLE fill:<i> 1 1 3600 (they live an hour), pipelined on a few
// connections; it prints "keys seconds".
//
// lag runs the command after "--" (the load) and, while it runs, every
// --every makes a decision on a fresh key on the master (CL.THROTTLE
// probe:<run>:<n> 1 1 3600) and then polls the replica with GET of that key,
// back to back, until the key is there: the probe's lag is the time from
// the master's reply to the first GET that finds the key. Every --every it
// also samples the byte lag: the master's master_repl_offset (the mean of a
// reading before and one after) minus the replica's slave_repl_offset, both
// from INFO replication. Once the load ends it times how long the replica
// takes to reach the master's offset. It prints one line:
//
//	probes missed lag_p50_ms lag_p99_ms lag_max_ms samples bytes_p50 bytes_p99 bytes_max catchup_ms
//
// (missed: probes the replica did not show within --timeout; they count as
// --timeout in the percentiles).
//
// resync sends REPLICAOF <master> to the replica and times it until INFO
// replication says master_link_status:up, and then until its DBSIZE equals
// the master's, read before; it prints "up_seconds equal_seconds keys".
//
// An address beginning with "/" is a Unix socket.
package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcell/redcell/internal/cliflag"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "fill":
		err = fill(os.Args[2:])
	case "lag":
		err = lag(os.Args[2:])
	case "resync":
		err = resync(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "repllag:", err)
		if errors.As(err, new(usageError)) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: repllag fill --addr A -n KEYS | lag --master A --replica B -- LOAD... | resync --master A --replica B")
	os.Exit(2)
}

// usageError is a command line repllag cannot read: it exits with status 2,
// as the flag package's ExitOnError does.
type usageError struct{ error }

// parse reads a subcommand's flags from args (cliflag.Parse, whose errors
// name --flags as users write them) and returns the arguments after them;
// more is whether the subcommand takes any. -h prints the flags and exits.
func parse(fs *flag.FlagSet, args []string, more bool) ([]string, error) {
	_, rest, err := cliflag.Parse(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(os.Stdout)
		fs.PrintDefaults()
		os.Exit(0)
	case err == nil && len(rest) > 0 && !more:
		err = fmt.Errorf("unexpected argument %q", rest[0])
	}
	if err != nil {
		return nil, usageError{fmt.Errorf("%s: %w", fs.Name(), err)}
	}
	return rest, nil
}

func fill(args []string) error {
	fs := flag.NewFlagSet("fill", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:6379", "server address")
	keys := fs.Int("n", 1000000, "keys to make")
	conns := fs.Int("c", 8, "connections")
	depth := fs.Int("P", 1000, "commands per pipeline")
	if _, err := parse(fs, args, false); err != nil {
		return err
	}
	start := time.Now()
	var next atomic.Int64
	errs := make(chan error, *conns)
	var wg sync.WaitGroup
	for range *conns {
		wg.Go(func() {
			c, err := dial(*addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.close()
			for {
				from := int(next.Add(int64(*depth))) - *depth
				to := min(from+*depth, *keys)
				if from >= to {
					return
				}
				for i := from; i < to; i++ {
					c.send("CL.THROTTLE", "fill:"+strconv.Itoa(i), "1", "1", "3600")
				}
				for range to - from {
					r, err := c.receive()
					if _, ok := throttleReply(r); err == nil && !ok {
						err = fmt.Errorf("CL.THROTTLE answered %v", r)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	fmt.Printf("%d %.3f\n", *keys, time.Since(start).Seconds())
	return nil
}

func lag(args []string) error {
	fs := flag.NewFlagSet("lag", flag.ContinueOnError)
	master := fs.String("master", "127.0.0.1:6379", "the master's address")
	replica := fs.String("replica", "127.0.0.1:6380", "the replica's address")
	every := fs.Duration("every", 20*time.Millisecond, "how often to probe and to sample the byte lag")
	timeout := fs.Duration("timeout", 10*time.Second, "how long a probe waits for the replica")
	load, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	if len(load) == 0 {
		return errors.New("lag: no load command after --")
	}
	conns := make([]*client, 5) // probe and poll; master, replica, master offsets
	for i, a := range []string{*master, *replica, *master, *replica, *master} {
		c, err := dial(a)
		if err != nil {
			return err
		}
		defer c.close()
		conns[i] = c
	}
	cmd := exec.Command(load[0], load[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	var loadErr error
	go func() {
		loadErr = cmd.Wait()
		close(done)
	}()

	var probes []time.Duration
	var samples []float64
	var missed int
	var probeErr, sampleErr error
	var wg sync.WaitGroup
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	wg.Go(func() {
		probes, missed, probeErr = probe(conns[0], conns[1], run, *every, *timeout, done)
	})
	wg.Go(func() {
		samples, sampleErr = sampleBytes(conns[2], conns[3], conns[4], *every, done)
	})
	wg.Wait()
	if loadErr != nil {
		return fmt.Errorf("the load %q: %w", strings.Join(load, " "), loadErr)
	}
	if err := errors.Join(probeErr, sampleErr); err != nil {
		return err
	}
	catchup, err := catchUp(conns[2], conns[3], time.Minute)
	if err != nil {
		return err
	}
	ms := make([]float64, len(probes))
	for i, d := range probes {
		ms[i] = float64(d) / 1e6
	}
	l, b := summarize(ms), summarize(samples)
	fmt.Printf("%d %d %.3f %.3f %.3f %d %.0f %.0f %.0f %.3f\n", len(probes), missed, l.p50, l.p99, l.max,
		len(samples), b.p50, b.p99, b.max, float64(catchup)/1e6)
	return nil
}

// probe makes a decision on a fresh key on the master every interval until
// done is closed, and returns how long each took to show on the replica.
func probe(master, replica *client, run string, every, timeout time.Duration, done <-chan struct{}) (lags []time.Duration, missed int, err error) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-done:
			return lags, missed, nil
		case <-tick.C:
		}
		key := "probe:" + run + ":" + strconv.Itoa(n)
		r, err := master.do("CL.THROTTLE", key, "1", "1", "3600")
		if err != nil {
			return lags, missed, err
		}
		if a, ok := throttleReply(r); !ok || a[0] != int64(0) {
			return lags, missed, fmt.Errorf("the master answered CL.THROTTLE %s 1 1 3600 with %v", key, r)
		}
		made := time.Now()
		for {
			r, err := replica.do("GET", key)
			if err != nil {
				return lags, missed, fmt.Errorf("the replica answered GET %s with %w", key, err)
			}
			d := time.Since(made)
			if r != nil {
				lags = append(lags, d)
				break
			}
			if d > timeout {
				lags = append(lags, timeout)
				missed++
				break
			}
		}
	}
}

// sampleBytes samples the byte lag every interval until done is closed.
func sampleBytes(master, replica, master2 *client, every time.Duration, done <-chan struct{}) ([]float64, error) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	var out []float64
	for {
		select {
		case <-done:
			return out, nil
		case <-tick.C:
		}
		m1, err := offset(master, "master_repl_offset")
		if err != nil {
			return out, err
		}
		r, err := offset(replica, "slave_repl_offset")
		if err != nil {
			return out, err
		}
		m2, err := offset(master2, "master_repl_offset")
		if err != nil {
			return out, err
		}
		out = append(out, byteLag(m1, r, m2))
	}
}

// byteLag is how far behind the replica's offset r is of the master's,
// read as m1 before and m2 after r: their mean, as the master's offset when
// r was read, less r, never below 0.
func byteLag(m1, r, m2 int64) float64 {
	return math.Max(0, float64(m1+m2)/2-float64(r))
}

// catchUp reads the master's offset and returns how long the replica takes
// to reach it.
func catchUp(master, replica *client, timeout time.Duration) (time.Duration, error) {
	target, err := offset(master, "master_repl_offset")
	if err != nil {
		return 0, err
	}
	start := time.Now()
	for {
		r, err := offset(replica, "slave_repl_offset")
		if err != nil {
			return 0, err
		}
		if r >= target {
			return time.Since(start), nil
		}
		if time.Since(start) > timeout {
			return 0, fmt.Errorf("the replica is still at offset %d, %d bytes behind the master's %d, %v after the load", r, target-r, target, timeout)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func offset(c *client, field string) (int64, error) {
	r, err := c.do("INFO", "replication")
	if err != nil {
		return 0, err
	}
	v, ok := infoField(text(r), field)
	if !ok {
		return 0, fmt.Errorf("INFO replication of %s has no %s", c.addr, field)
	}
	return strconv.ParseInt(v, 10, 64)
}

// infoField is field's value in an INFO reply, ok false if it has none.
func infoField(info, field string) (string, bool) {
	for line := range strings.Lines(info) {
		k, v, found := strings.Cut(strings.TrimRight(line, "\r\n"), ":")
		if found && k == field {
			return v, true
		}
	}
	return "", false
}

func resync(args []string) error {
	fs := flag.NewFlagSet("resync", flag.ContinueOnError)
	master := fs.String("master", "127.0.0.1:6379", "the master's address (host:port)")
	replica := fs.String("replica", "127.0.0.1:6380", "the replica's address")
	timeout := fs.Duration("timeout", 10*time.Minute, "how long to wait")
	if _, err := parse(fs, args, false); err != nil {
		return err
	}
	host, port, err := net.SplitHostPort(*master)
	if err != nil {
		return err
	}
	m, err := dial(*master)
	if err != nil {
		return err
	}
	defer m.close()
	rc, err := dial(*replica)
	if err != nil {
		return err
	}
	defer rc.close()
	want, err := m.do("DBSIZE")
	if err != nil {
		return err
	}
	start := time.Now()
	if r, err := rc.do("REPLICAOF", host, port); err != nil || r != "OK" {
		return fmt.Errorf("REPLICAOF %s %s: %v %v", host, port, r, err)
	}
	var up time.Duration
	for up == 0 {
		r, err := rc.do("INFO", "replication")
		if err != nil {
			return err
		}
		if v, _ := infoField(text(r), "master_link_status"); v == "up" {
			up = time.Since(start)
		} else if time.Since(start) > *timeout {
			return fmt.Errorf("the replica's link is not up %v after REPLICAOF", *timeout)
		} else {
			time.Sleep(time.Millisecond)
		}
	}
	for {
		r, err := rc.do("DBSIZE")
		if err != nil {
			return err
		}
		if r == want {
			break
		}
		if time.Since(start) > *timeout {
			return fmt.Errorf("the replica holds %v keys, the master %v, %v after REPLICAOF", r, want, *timeout)
		}
		time.Sleep(time.Millisecond)
	}
	fmt.Printf("%.3f %.3f %v\n", up.Seconds(), time.Since(start).Seconds(), want)
	return nil
}

// stats are a sample's nearest-rank percentiles.
type stats struct{ p50, p99, max float64 }

func summarize(v []float64) stats {
	if len(v) == 0 {
		return stats{}
	}
	s := slices.Sorted(slices.Values(v))
	rank := func(q float64) float64 { return s[max(0, int(math.Ceil(q*float64(len(s))))-1)] }
	return stats{p50: rank(0.5), p99: rank(0.99), max: s[len(s)-1]}
}
