package engine

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// tlsHandshakeTimeout bounds a TLS handshake.
const tlsHandshakeTimeout = 10 * time.Second

// ServeTLS accepts TLS connections on ln until Close, as Serve does plain
// ones; both may run at once on one Server. cfg usually comes from
// LoadTLSConfig.
func (e *Engine) ServeTLS(ln net.Listener, cfg *tls.Config) error {
	return e.serve(tls.NewListener(ln, cfg), false)
}

// handshake runs a TLS connection's handshake, once, on the connection's own
// goroutine (the accept loop must not wait on a client), within
// tlsHandshakeTimeout: a client that connects and says nothing holds a
// connection no longer than that.
func (c *Conn) handshake() error {
	c.handshook = true
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return nil
	}
	_ = tc.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	err := tc.Handshake()
	_ = tc.SetDeadline(time.Time{})
	if err != nil {
		c.e.logger.Debug("TLS handshake failed", "addr", c.addr, "err", err)
	}
	return err
}

// TLSFiles are the PEM files of a TLS listener, by Redis's setting names.
type TLSFiles struct {
	CertFile string // tls-cert-file: the server's certificate chain
	KeyFile  string // tls-key-file: its private key
	// CAFile (tls-ca-cert-file), when set, holds the CAs that client
	// certificates must chain to.
	CAFile string
	// AuthClients (tls-auth-clients) says whether clients must present a
	// certificate signed by CAFile: "yes" (Redis's default), "optional"
	// (checked when presented), or "no". Without a CAFile client
	// certificates are not asked for, and "optional" is an error.
	AuthClients string
}

// LoadTLSConfig reads the files f names into a server TLS configuration:
// TLS 1.2 or later, as Redis's default tls-protocols.
func LoadTLSConfig(f TLSFiles) (*tls.Config, error) {
	if f.CertFile == "" || f.KeyFile == "" {
		return nil, errors.New("TLS needs both a certificate file and a key file")
	}
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("load TLS certificate %s and key %s: %w", f.CertFile, f.KeyFile, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	switch f.AuthClients {
	case "", "yes", "optional", "no":
	default:
		return nil, fmt.Errorf("tls-auth-clients %q: must be yes, optional or no", f.AuthClients)
	}
	if f.CAFile == "" {
		if f.AuthClients == "optional" {
			return nil, errors.New("tls-auth-clients optional needs a CA certificate file to check clients against")
		}
		return cfg, nil
	}
	pem, err := os.ReadFile(f.CAFile)
	if err != nil {
		return nil, fmt.Errorf("read TLS CA certificate file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("TLS CA certificate file %s holds no PEM certificate", f.CAFile)
	}
	cfg.ClientCAs = pool
	switch f.AuthClients {
	case "", "yes":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	case "optional":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case "no":
		cfg.ClientAuth = tls.NoClientCert
	}
	return cfg, nil
}
