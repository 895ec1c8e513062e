package protocol_test

import (
	"crypto/tls"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/engine"
	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/server"
)

// TLS end to end on the built binary: go-redis and redis-cli with a client
// certificate get the same decisions as plain clients on the same keys;
// without a certificate, with one from another CA, or speaking plain RESP to
// the TLS port, a client is refused and the server carries on.
func TestTLSEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	pki := testkit.NewPKI(t)
	var p *harness.BinaryServer
	var err error
	for attempt := 0; attempt < 5; attempt++ { // the free port may be taken before the server binds it
		p, err = harness.LaunchBinary(t, nil, harness.OnLoopback("--in-memory", "--tls-port", strconv.Itoa(harness.FreePort(t)),
			"--tls-cert-file", pki.ServerCert, "--tls-key-file", pki.ServerKey, "--tls-ca-cert-file", pki.CA)...)
		if err == nil {
			break
		}
	}
	require.NoError(t, err)
	require.NotZero(t, p.TLSPort, "the ready line names the TLS address; log:\n%s", p.Log())
	bg := harness.Ctx(t)
	tlsAddr := "127.0.0.1:" + strconv.Itoa(p.TLSPort)

	secure := redis.NewClient(&redis.Options{Addr: tlsAddr, TLSConfig: pki.ClientTLS(pki.Client)})
	t.Cleanup(func() { _ = secure.Close() })
	plain := p.GoRedis(t)
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
		path := harness.RedisCLI(t)
		out, stderr, err := harness.RunCLI(path, p.TLSPort, "", "--tls", "--cacert", pki.CA, "--cert", pki.ClientCert, "--key", pki.ClientKey,
			"CL.THROTTLE", "tls-key", "4", "1", "3600")
		require.NoError(t, err)
		require.Empty(t, stderr)
		// reset_after is 3 hours less the seconds since the first call.
		require.Regexp(t, `^0\n5\n2\n-1\n10(800|799|798)\n$`, out)

		out, stderr, err = harness.RunCLI(path, p.TLSPort, "", "--tls", "--cacert", pki.CA, "PING")
		require.NoError(t, err)
		require.Empty(t, out, "no client certificate: refused")
		require.Contains(t, stderr, "Error: ", "redis-cli says why")

		out, stderr, err = harness.RunCLI(path, p.TLSPort, "", "--tls", "--cacert", pki.CA, "--cert", pki.RogueCert, "--key", pki.RogueKey, "PING")
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
			{"no certificate", pki.ClientTLS(), "remote error: tls: certificate required"},
			{"another CA's", pki.ClientTLS(pki.Rogue), "remote error: tls: unknown certificate authority"},
			{"server not trusted", &tls.Config{ServerName: "127.0.0.1", Certificates: []tls.Certificate{pki.Client}, MinVersion: tls.VersionTLS12},
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
		openssl := harness.NeedTool(t, "`apt-get install openssl`", "openssl")
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
	pki := testkit.NewPKI(t)
	start := func(files engine.TLSFiles, limits server.Limits) (plain *harness.TestServer, tlsAddr string) {
		files.CertFile, files.KeyFile = pki.ServerCert, pki.ServerKey
		cfg, err := engine.LoadTLSConfig(files)
		require.NoError(t, err)
		ts := harness.StartServer(t, harness.WithLimits(limits))
		return ts, ts.ServeTLS(t, cfg)
	}
	dialTLS := func(addr string, cfg *tls.Config) *testkit.Conn {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
		require.NoError(t, err)
		return testkit.NewConn(t, conn, 1<<16)
	}

	plain, tlsAddr := start(engine.TLSFiles{CAFile: pki.CA}, server.Limits{MaxClients: 2})
	first := dialTLS(tlsAddr, pki.ClientTLS(pki.Client))
	require.Equal(t, "+PONG\r\n", first.DoInline("PING"))
	second := plain.Raw(t)
	second.Write("PING\r\n")
	require.Equal(t, "+PONG\r\n", second.Read())
	third := dialTLS(tlsAddr, pki.ClientTLS(pki.Client))
	refusal, err := third.ReadAll()
	require.NoError(t, err)
	require.Equal(t, "-ERR max number of clients reached\r\n", refusal)

	_, tlsAddr = start(engine.TLSFiles{CAFile: pki.CA, AuthClients: "optional"}, server.Limits{})
	anonymous := dialTLS(tlsAddr, pki.ClientTLS())
	require.Equal(t, "+PONG\r\n", anonymous.DoInline("PING"))
	rogue, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", tlsAddr, pki.ClientTLS(pki.Rogue))
	if err == nil { // TLS 1.3: the server's verdict arrives with the first read
		t.Cleanup(func() { _ = rogue.Close() })
		require.NoError(t, rogue.SetDeadline(harness.Deadline()))
		_, err = io.WriteString(rogue, "PING\r\n")
		if err == nil {
			_, err = io.ReadAll(rogue)
		}
	}
	require.ErrorContains(t, err, "certificate", "optional still checks a certificate presented")

	_, tlsAddr = start(engine.TLSFiles{}, server.Limits{})
	noCA := dialTLS(tlsAddr, pki.ClientTLS())
	require.Equal(t, "+PONG\r\n", noCA.DoInline("PING"))

	// A client that opens a TLS connection and says nothing ties it up for
	// the handshake timeout at most; meanwhile others are served.
	silent, err := net.Dial("tcp", tlsAddr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = silent.Close() })
	other := dialTLS(tlsAddr, pki.ClientTLS())
	require.Equal(t, "+PONG\r\n", other.DoInline("PING"))
}
