// Command rlsload is a load generator for Envoy's rate limit service
// (envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit), redcell's
// --rls-addr or envoyproxy/ratelimit alike: a fixed number of calls in
// flight, each with descriptors whose values are drawn from many, for a
// duration, then one line of requests/s, latency percentiles and the
// answers' codes. Run by hand (bench/rls.sh runs it), never from tests.
//
//	rlsload -addr 127.0.0.1:8081 -c 50 -d 10s -values 10000
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	pbc "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "the rate limit service's `host:port`")
	inFlight := flag.Int("c", 50, "calls in flight")
	conns := flag.Int("conns", 4, "gRPC connections the calls are spread over")
	dur := flag.Duration("d", 10*time.Second, "how long to send calls")
	values := flag.Int("values", 10000, "distinct descriptor values drawn from")
	domain := flag.String("domain", "bench", "the requests' domain")
	key := flag.String("key", "user", "the descriptor entry's key")
	perRequest := flag.Int("descriptors", 1, "descriptors in each request")
	warmup := flag.Duration("warmup", time.Second, "calls sent before the measured run, not counted")
	flag.Parse()

	clients := make([]pb.RateLimitServiceClient, *conns)
	for i := range clients {
		conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			fmt.Fprintln(os.Stderr, "rlsload:", err)
			os.Exit(1)
		}
		defer conn.Close()
		clients[i] = pb.NewRateLimitServiceClient(conn)
	}
	run := func(d time.Duration, record bool) (n int64, lat []time.Duration, ok, over, failed int64) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var nOK, nOver, nErr, count atomic.Int64
		stop := time.Now().Add(d)
		for w := range *inFlight {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
				c := clients[w%len(clients)]
				var mine []time.Duration
				req := &pb.RateLimitRequest{Domain: *domain}
				for time.Now().Before(stop) {
					req.Descriptors = req.Descriptors[:0]
					for range *perRequest {
						req.Descriptors = append(req.Descriptors, &pbc.RateLimitDescriptor{Entries: []*pbc.RateLimitDescriptor_Entry{
							{Key: *key, Value: strconv.Itoa(rng.IntN(*values))}}})
					}
					t0 := time.Now()
					resp, err := c.ShouldRateLimit(context.Background(), req)
					took := time.Since(t0)
					count.Add(1)
					switch {
					case err != nil:
						nErr.Add(1)
					case resp.OverallCode == pb.RateLimitResponse_OVER_LIMIT:
						nOver.Add(1)
					default:
						nOK.Add(1)
					}
					if record {
						mine = append(mine, took)
					}
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
		}
		wg.Wait()
		return count.Load(), lat, nOK.Load(), nOver.Load(), nErr.Load()
	}
	if *warmup > 0 {
		run(*warmup, false)
	}
	start := time.Now()
	n, lat, ok, over, failed := run(*dur, true)
	elapsed := time.Since(start)
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds())
	}
	fmt.Printf("requests %d rps %.0f p50_us %.0f p99_us %.0f ok %d over_limit %d errors %d\n",
		n, float64(n)/elapsed.Seconds(), pct(0.50), pct(0.99), ok, over, failed)
	if failed > 0 {
		os.Exit(1)
	}
}
