package daemon

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// serveHTTP serves h on ln, the daemon's side listeners (the metrics and
// status page, pprof, the rate limit service's health check), until the
// returned stop, which closes ln and waits for the server to end. what
// names it in the log, with where (the log's attributes: where it serves,
// which tests and tools read from the log).
func serveHTTP(ln net.Listener, h http.Handler, what string, logger *slog.Logger, where ...any) (stop func()) {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(what+" stopped", "err", err)
		}
	}()
	logger.Info("serving "+what, where...)
	return func() { _ = hs.Close(); <-done }
}
