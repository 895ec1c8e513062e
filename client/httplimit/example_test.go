package httplimit_test

import (
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcell/redcell/client"
	"github.com/redcell/redcell/client/httplimit"
)

// Every caller IP gets 16 requests at once and 30 a minute; the API behind
// is served only what is allowed.
func ExampleMiddleware() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	limiter := client.New(rdb, client.Options{})
	api := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("hello\n")) })

	limit := httplimit.Middleware(limiter, httplimit.Config{Limit: client.Limit{Burst: 15, Count: 30, Period: time.Minute}})
	_ = http.ListenAndServe("127.0.0.1:8080", limit(api))
}
