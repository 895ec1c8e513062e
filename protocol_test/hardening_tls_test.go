package protocol_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/server"
)

// testPKI is a CA, a server certificate for 127.0.0.1 and a client
// certificate it signed, plus a client certificate from another CA, all
// made for the test and written as PEM files under a temporary directory.
type testPKI struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey, RogueCert, RogueKey string // file paths
	pool                                                                  *x509.CertPool
	client, rogue                                                         tls.Certificate
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	p := &testPKI{pool: x509.NewCertPool()}
	write := func(name string, blockType string, der []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), 0o600))
		return path
	}
	serial := int64(1)
	issue := func(tmpl *x509.Certificate, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, []byte, []byte) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		serial++
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore = time.Now().Add(-time.Hour)
		tmpl.NotAfter = time.Now().Add(24 * time.Hour)
		if parent == nil {
			parent, parentKey = tmpl, key
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
		require.NoError(t, err)
		cert, err := x509.ParseCertificate(der)
		require.NoError(t, err)
		keyDER, err := x509.MarshalECPrivateKey(key)
		require.NoError(t, err)
		return cert, key, der, keyDER
	}
	caTmpl := func(name string) *x509.Certificate {
		return &x509.Certificate{Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
			KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	}
	leaf := func(name string, usage x509.ExtKeyUsage) *x509.Certificate {
		return &x509.Certificate{Subject: pkix.Name{CommonName: name}, KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"}}
	}
	ca, caKey, caDER, _ := issue(caTmpl("redcell test CA"), nil, nil)
	p.CA = write("ca.pem", "CERTIFICATE", caDER)
	p.pool.AddCert(ca)
	_, _, der, keyDER := issue(leaf("redcell test server", x509.ExtKeyUsageServerAuth), ca, caKey)
	p.ServerCert, p.ServerKey = write("server.pem", "CERTIFICATE", der), write("server.key", "EC PRIVATE KEY", keyDER)
	_, _, der, keyDER = issue(leaf("redcell test client", x509.ExtKeyUsageClientAuth), ca, caKey)
	p.ClientCert, p.ClientKey = write("client.pem", "CERTIFICATE", der), write("client.key", "EC PRIVATE KEY", keyDER)
	rogueCA, rogueKey, _, _ := issue(caTmpl("some other CA"), nil, nil)
	_, _, der, keyDER = issue(leaf("rogue client", x509.ExtKeyUsageClientAuth), rogueCA, rogueKey)
	p.RogueCert, p.RogueKey = write("rogue.pem", "CERTIFICATE", der), write("rogue.key", "EC PRIVATE KEY", keyDER)
	var err error
	p.client, err = tls.LoadX509KeyPair(p.ClientCert, p.ClientKey)
	require.NoError(t, err)
	p.rogue, err = tls.LoadX509KeyPair(p.RogueCert, p.RogueKey)
	require.NoError(t, err)
	return p
}

// clientTLS trusts the test CA and presents cert, if given, whatever CAs
// the server says it accepts (Go's client would otherwise keep a
// certificate from another CA to itself).
func (p *testPKI) clientTLS(cert ...tls.Certificate) *tls.Config {
	cfg := &tls.Config{RootCAs: p.pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	if len(cert) > 0 {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert[0], nil }
	}
	return cfg
}

// TLS end to end on the built binary: go-redis and redis-cli with a client
// certificate get the same decisions as plain clients on the same keys;
// without a certificate, with one from another CA, or speaking plain RESP to
// the TLS port, a client is refused and the server carries on.
func TestTLSEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	pki := newTestPKI(t)
	var p *binaryServer
	var err error
	for attempt := 0; attempt < 5; attempt++ { // the free port may be taken before the server binds it
		p, err = launchBinary(t, nil, onLoopback("--in-memory", "--tls-port", strconv.Itoa(freePort(t)),
			"--tls-cert-file", pki.ServerCert, "--tls-key-file", pki.ServerKey, "--tls-ca-cert-file", pki.CA)...)
		if err == nil {
			break
		}
	}
	require.NoError(t, err)
	require.NotZero(t, p.TLSPort, "the ready line names the TLS address; log:\n%s", p.Log())
	bg := ctx(t)
	tlsAddr := "127.0.0.1:" + strconv.Itoa(p.TLSPort)

	secure := redis.NewClient(&redis.Options{Addr: tlsAddr, TLSConfig: pki.clientTLS(pki.client)})
	t.Cleanup(func() { _ = secure.Close() })
	plain := p.goRedis(t)
	throttle := func(rdb *redis.Client) ([]int64, error) {
		return rdb.Do(bg, "CL.THROTTLE", "tls-key", 4, 1, 3600).Int64Slice()
	}
	got, err := throttle(secure)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 5, 4, -1, 3600}, got)
	got, err = throttle(plain)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 5, 3, -1}, got[:4], "plain and TLS clients share the keyspace")
	require.InDelta(t, 7200, got[4], 2)

	t.Run("redis-cli --tls", func(t *testing.T) {
		path := redisCLI(t)
		out, stderr, err := runCLI(path, p.TLSPort, "", "--tls", "--cacert", pki.CA, "--cert", pki.ClientCert, "--key", pki.ClientKey,
			"CL.THROTTLE", "tls-key", "4", "1", "3600")
		require.NoError(t, err)
		require.Empty(t, stderr)
		// reset_after is 3 hours less the seconds since the first call.
		require.Regexp(t, `^0\n5\n2\n-1\n10(800|799|798)\n$`, out)

		out, stderr, err = runCLI(path, p.TLSPort, "", "--tls", "--cacert", pki.CA, "PING")
		require.NoError(t, err)
		require.Empty(t, out, "no client certificate: refused")
		require.Contains(t, stderr, "Error: ", "redis-cli says why")

		out, stderr, err = runCLI(path, p.TLSPort, "", "--tls", "--cacert", pki.CA, "--cert", pki.RogueCert, "--key", pki.RogueKey, "PING")
		require.NoError(t, err)
		require.Empty(t, out, "a certificate from another CA: refused")
		require.Contains(t, stderr, "Error: ")
	})

	t.Run("go-redis refused without a valid certificate", func(t *testing.T) {
		for _, c := range []struct {
			name string
			cfg  *tls.Config
			want string
		}{
			{"no certificate", pki.clientTLS(), "remote error: tls: certificate required"},
			{"another CA's", pki.clientTLS(pki.rogue), "remote error: tls: unknown certificate authority"},
			{"server not trusted", &tls.Config{ServerName: "127.0.0.1", Certificates: []tls.Certificate{pki.client}, MinVersion: tls.VersionTLS12},
				"x509: certificate signed by unknown authority"},
			{"plain RESP to the TLS port", nil, "EOF"},
		} {
			rdb := redis.NewClient(&redis.Options{Addr: tlsAddr, TLSConfig: c.cfg, MaxRetries: -1,
				DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second})
			err := rdb.Ping(bg).Err()
			_ = rdb.Close()
			require.ErrorContains(t, err, c.want, c.name)
		}
	})

	t.Run("openssl s_client", func(t *testing.T) {
		openssl := needTool(t, "`apt-get install openssl`", "openssl")
		cmd := exec.Command(openssl, "s_client", "-connect", tlsAddr, "-CAfile", pki.CA, "-cert", pki.ClientCert,
			"-key", pki.ClientKey, "-quiet", "-verify_return_error")
		cmd.Stdin = strings.NewReader("PING\r\nQUIT\r\n")
		out, err := cmd.Output()
		require.NoError(t, err)
		require.Equal(t, "+PONG\r\n+OK\r\n", string(out))
	})

	// After all that, both listeners still serve.
	require.NoError(t, secure.Ping(bg).Err())
	require.NoError(t, plain.Ping(bg).Err())
}

// In process: TLS and plain connections count together against maxclients,
// and a TLS client beyond it reads Redis's refusal over TLS; with
// tls-auth-clients optional a client without a certificate is served.
func TestTLSInProcess(t *testing.T) {
	pki := newTestPKI(t)
	start := func(files server.TLSFiles, limits server.Limits) (plain *testServer, tlsAddr string) {
		files.CertFile, files.KeyFile = pki.ServerCert, pki.ServerKey
		cfg, err := server.LoadTLSConfig(files)
		require.NoError(t, err)
		ts := startServer(t, withLimits(limits))
		return ts, ts.serveTLS(t, cfg)
	}
	dialTLS := func(addr string, cfg *tls.Config) *testkit.Conn {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
		require.NoError(t, err)
		return testkit.NewConn(t, conn, 1<<16)
	}

	plain, tlsAddr := start(server.TLSFiles{CAFile: pki.CA}, server.Limits{MaxClients: 2})
	first := dialTLS(tlsAddr, pki.clientTLS(pki.client))
	require.Equal(t, "+PONG\r\n", first.DoInline("PING"))
	second := plain.raw(t)
	second.Write("PING\r\n")
	require.Equal(t, "+PONG\r\n", second.Read())
	third := dialTLS(tlsAddr, pki.clientTLS(pki.client))
	refusal, err := third.ReadAll()
	require.NoError(t, err)
	require.Equal(t, "-ERR max number of clients reached\r\n", refusal)

	_, tlsAddr = start(server.TLSFiles{CAFile: pki.CA, AuthClients: "optional"}, server.Limits{})
	anonymous := dialTLS(tlsAddr, pki.clientTLS())
	require.Equal(t, "+PONG\r\n", anonymous.DoInline("PING"))
	rogue, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", tlsAddr, pki.clientTLS(pki.rogue))
	if err == nil { // TLS 1.3: the server's verdict arrives with the first read
		t.Cleanup(func() { _ = rogue.Close() })
		require.NoError(t, rogue.SetDeadline(deadline()))
		_, err = io.WriteString(rogue, "PING\r\n")
		if err == nil {
			_, err = io.ReadAll(rogue)
		}
	}
	require.ErrorContains(t, err, "certificate", "optional still checks a certificate presented")

	_, tlsAddr = start(server.TLSFiles{}, server.Limits{})
	noCA := dialTLS(tlsAddr, pki.clientTLS())
	require.Equal(t, "+PONG\r\n", noCA.DoInline("PING"))

	// A client that opens a TLS connection and says nothing ties it up for
	// the handshake timeout at most; meanwhile others are served.
	silent, err := net.Dial("tcp", tlsAddr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = silent.Close() })
	other := dialTLS(tlsAddr, pki.clientTLS())
	require.Equal(t, "+PONG\r\n", other.DoInline("PING"))
}
