package client_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcell/redcell/client"
)

// Three calls at once, then one a minute: the fourth call is refused, with
// how long to wait, and the ones after it are refused without a round trip.
func Example() {
	rdb := redis.NewClient(&redis.Options{Addr: exampleAddr}) // redcell, or Redis with redis-cell
	defer rdb.Close()
	// The zero Options are for production (a 20 ms timeout). Here a
	// second: on a busy machine the first call, which also dials, could
	// take longer than 20 ms and be answered by the fallback, whose
	// RetryAfter is exact where the server's is whole seconds.
	limiter := client.New(rdb, client.Options{Timeout: time.Second})
	defer limiter.Close()

	ctx := context.Background()
	limit := client.Limit{Burst: 2, Count: 1, Period: time.Minute}
	for range 4 {
		d, err := limiter.Allow(ctx, "example:user:42", limit)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(d.Allowed, d.Remaining, d.RetryAfter)
	}
	// Output:
	// true 2 0s
	// true 1 0s
	// true 0 0s
	// false 0 1m0s
}
