package daemon

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // registers on http.DefaultServeMux, served only with --pprof-addr
	"time"
)

// servePprof serves net/http/pprof on addr (--pprof-addr) until the
// returned stop is called.
func servePprof(addr string, logger *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-addr %s: %w", addr, err)
	}
	hs := &http.Server{Handler: http.DefaultServeMux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	logger.Info("serving pprof", "addr", ln.Addr().String())
	return func() { _ = hs.Close() }, nil
}
