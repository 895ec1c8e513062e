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
	limiter := client.New(rdb, client.Options{})
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
