package daemon

import (
	"crypto/tls"
	"fmt"
	"net"
	"strconv"

	"github.com/redcell/redcell/config"
	"github.com/redcell/redcell/engine"
)

// listeners are the RESP listeners: plain TCP on --bind and --port, and
// TLS on --tls-port when it is set (else tls is nil); and the metrics
// listener on --metrics-addr when it is set (else metrics is nil).
type listeners struct {
	plain   net.Listener
	tls     net.Listener
	tlsCfg  *tls.Config
	metrics net.Listener
}

// listen opens the listeners cfg asks for, the TLS one with its
// certificates loaded; on an error none is left open.
func listen(cfg config.Config) (listeners, error) {
	l, err := listenRESP(cfg)
	if err != nil || cfg.MetricsAddr == "" {
		return l, err
	}
	if l.metrics, err = net.Listen("tcp", cfg.MetricsAddr); err != nil {
		l.close()
		return listeners{}, fmt.Errorf("--metrics-addr %s: %w", cfg.MetricsAddr, err)
	}
	return l, nil
}

// listenRESP opens the RESP listeners.
func listenRESP(cfg config.Config) (listeners, error) {
	addr := net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return listeners{}, fmt.Errorf("listen on %s: %w", addr, err)
	}
	l := listeners{plain: ln}
	if cfg.TLSPort == 0 {
		return l, nil
	}
	if l.tlsCfg, err = engine.LoadTLSConfig(cfg.TLSFiles()); err != nil {
		_ = ln.Close()
		return listeners{}, err
	}
	addr = net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.TLSPort))
	if l.tls, err = net.Listen("tcp", addr); err != nil {
		_ = ln.Close()
		return listeners{}, fmt.Errorf("listen for TLS on %s: %w", addr, err)
	}
	return l, nil
}

// close closes the listeners when serving does not begin; once Serve has
// the RESP ones, it closes them, and serveMetrics's stop the metrics one.
func (l listeners) close() {
	_ = l.plain.Close()
	if l.tls != nil {
		_ = l.tls.Close()
	}
	if l.metrics != nil {
		_ = l.metrics.Close()
	}
}
