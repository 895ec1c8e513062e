package daemon

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"

	"github.com/redcell/redcell/config"
)

// servePprof serves net/http/pprof on addr (--pprof-addr) until the
// returned stop is called, on a mux of its own (pprofHandler).
func servePprof(addr string, logger *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-addr %s: %w", addr, err)
	}
	return serveHTTP(ln, pprofHandler(os.Args), "pprof", logger, "addr", ln.Addr().String()), nil
}

// pprofHandler serves net/http/pprof's pages, as its import registers them
// on http.DefaultServeMux, but on a mux of its own, which redcell never
// serves: that one's /debug/pprof/cmdline shows every argument, passwords
// included. Here cmdline shows args (the process's) with every secret
// flag's value redacted (config.RedactArgs), in the format pprof.Cmdline
// uses, rather than not at all: the other flags say how the process was
// started, which is what the page is for.
func pprofHandler(args []string) http.Handler {
	cmdline := strings.Join(config.RedactArgs(args), "\x00")
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index) // and the profiles by name: /debug/pprof/heap, ...
	mux.HandleFunc("/debug/pprof/cmdline", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, cmdline)
	})
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
