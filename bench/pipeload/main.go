// Command pipeload sends rate-limit decisions to a Redis-protocol server in
// pipelines, for the designs redis-benchmark cannot send: a decision that
// takes two commands, as the fixed window users write with INCR and EXPIRE.
// bench/limiters.sh runs it side by side against redcell and Redis.
//
//	pipeload --addr 127.0.0.1:6391 --mode incr   -c 50 -P 16 -n 1000000 -r 100000
//	pipeload --addr 127.0.0.1:6390 --mode window -c 50 -P 16 -n 1000000 -r 100000
//
// Modes, each one decision per key of -r random keys, limit 100 a minute:
//
//	incr    INCR fixed:<n>:<minute> then EXPIRE fixed:<n>:<minute> 60, in one
//	        pipeline: the fixed window on Redis (allowed while INCR <= 100)
//	window  CL.WINDOW fixed:<n> 100 60 PRECISION 1: redcell's fixed window
//
// Its flags read as redis-benchmark's: one dash for a letter, two for a
// word (one dash is accepted too). It prints one line in redis-benchmark's
// --csv format, so that the bench's
// scripts read both alike: "test","rps","avg_latency_ms","min_latency_ms",
// "p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms", the
// latencies being those of whole pipelines.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcell/redcell/internal/cliflag"
)

func main() {
	fs := flag.NewFlagSet("pipeload", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:6379", "server address")
	mode := fs.String("mode", "incr", "incr (INCR + EXPIRE) or window (CL.WINDOW ... PRECISION 1)")
	conns := fs.Int("c", 50, "connections")
	depth := fs.Int("P", 16, "decisions per pipeline")
	total := fs.Int64("n", 1000000, "decisions in all")
	keys := fs.Int("r", 100000, "random keys")
	_, rest, err := cliflag.Parse(fs, os.Args[1:])
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(os.Stdout)
		fs.PrintDefaults()
		return
	case err != nil:
	case len(rest) > 0:
		err = fmt.Errorf("unexpected argument %q", rest[0])
	case *mode != "incr" && *mode != "window":
		err = fmt.Errorf("--mode %s: must be incr or window", *mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pipeload:", err)
		os.Exit(2)
	}
	var left atomic.Int64
	left.Store(*total)
	var mu sync.Mutex
	var lats []time.Duration
	var failed atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for i := range *conns {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			l, err := run(*addr, *mode, *depth, *keys, &left, rand.New(rand.NewPCG(seed, 1)))
			if err != nil {
				failed.Store(err)
			}
			mu.Lock()
			lats = append(lats, l...)
			mu.Unlock()
		}(uint64(i))
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		fmt.Fprintln(os.Stderr, "pipeload:", err)
		os.Exit(1)
	}
	slices.Sort(lats)
	ms := func(q float64) string {
		if len(lats) == 0 {
			return "0"
		}
		return strconv.FormatFloat(float64(lats[int(q*float64(len(lats)-1))])/1e6, 'f', 3, 64)
	}
	var sum time.Duration
	for _, l := range lats {
		sum += l
	}
	avg := "0"
	if len(lats) > 0 {
		avg = strconv.FormatFloat(float64(sum)/float64(len(lats))/1e6, 'f', 3, 64)
	}
	fmt.Println(`"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"`)
	fmt.Printf("%q,\"%.2f\",\"%s\",\"%s\",\"%s\",\"%s\",\"%s\",\"%s\"\n", *mode, float64(*total)/elapsed.Seconds(),
		avg, ms(0), ms(0.5), ms(0.95), ms(0.99), ms(1))
}

// run sends pipelines of depth decisions on one connection until left is
// spent, and returns each pipeline's round trip.
func run(addr, mode string, depth, keys int, left *atomic.Int64, r *rand.Rand) ([]time.Duration, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	w := bufio.NewWriterSize(conn, 64<<10)
	rd := bufio.NewReaderSize(conn, 64<<10)
	var lats []time.Duration
	var buf []byte
	for {
		n := int(min(int64(depth), left.Add(-int64(depth))+int64(depth)))
		if n <= 0 {
			return lats, nil
		}
		buf = buf[:0]
		replies := 0
		minute := time.Now().Unix() / 60
		for range n {
			key := r.IntN(keys)
			if mode == "incr" {
				k := "fixed:" + strconv.Itoa(key) + ":" + strconv.FormatInt(minute, 10)
				buf = appendCommand(buf, "INCR", k)
				buf = appendCommand(buf, "EXPIRE", k, "60")
				replies += 2
			} else {
				buf = appendCommand(buf, "CL.WINDOW", "fixed:"+strconv.Itoa(key), "100", "60", "PRECISION", "1")
				replies++
			}
		}
		t := time.Now()
		if _, err := w.Write(buf); err != nil {
			return lats, err
		}
		if err := w.Flush(); err != nil {
			return lats, err
		}
		for range replies {
			if err := skipReply(rd); err != nil {
				return lats, err
			}
		}
		lats = append(lats, time.Since(t))
	}
}

func appendCommand(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, "\r\n"...)
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, "\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}

// skipReply reads one reply: an integer, or an array of them; an error
// reply is an error.
func skipReply(rd *bufio.Reader) error {
	line, err := rd.ReadSlice('\n')
	if err != nil {
		return err
	}
	switch line[0] {
	case ':':
		return nil
	case '*':
		n, err := strconv.Atoi(string(line[1 : len(line)-2]))
		if err != nil {
			return err
		}
		for range n {
			if err := skipReply(rd); err != nil {
				return err
			}
		}
		return nil
	case '-':
		return errors.New("server error: " + string(line[1:len(line)-2]))
	default:
		return fmt.Errorf("unexpected reply %q", line)
	}
}
