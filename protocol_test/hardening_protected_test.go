package protocol_test

import (
	"net"
	"strings"
	"testing"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/server"
)

// errDenied is Redis 7's answer to a connection from another host while
// protected mode is on and the default user has no password
// (clientAcceptHandler in Redis's networking.c), byte for byte.
const errDenied = "DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. " +
	"In this mode connections are only accepted from the loopback interface. " +
	"If you want to connect from external computers to Redis you may adopt one of the following solutions: " +
	"1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis " +
	"from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. " +
	"Use CONFIG REWRITE to make this change permanent. " +
	"2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode " +
	"option to 'no', and then restarting the server. " +
	"3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. " +
	"4) Set up an authentication password for the default user. " +
	"NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside."

// Protected mode is checked as each connection is accepted, as Redis 7
// checks it, so a password removed while the server runs (ACL SETUSER
// default nopass) does not leave it open to other hosts. The other host
// here is this machine's own address that is not loopback: the server
// listens on it, and a connection to it comes from it. Without one the
// test is skipped.
func TestProtectedModeIsCheckedPerConnection(t *testing.T) {
	ip := nonLoopbackIP(t)
	ts := harness.StartServer(t, func(c *server.Config) { c.ProtectedMode = true })
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	require.NoError(t, err)
	ts.Serve(t, func() error { return ts.Srv.Serve(ln) })
	outside := func() *testkit.Conn { return testkit.Dial(t, ln.Addr().String()) }
	denied := func(msg string) {
		t.Helper()
		c := outside()
		require.Equal(t, testkit.Err(errDenied), c.Read(), msg)
		c.ExpectClosed()
	}

	local := ts.Raw(t)
	require.Equal(t, testkit.Bulks("protected-mode", "yes"), local.Do("CONFIG", "GET", "protected-mode"))
	denied("no password: another host is refused, and closed")
	require.Equal(t, testkit.Simple("PONG"), ts.Raw(t).Do("PING"), "the loopback is served")

	require.Equal(t, testkit.OK, local.Do("ACL", "SETUSER", "default", ">pw"))
	c := outside()
	require.Equal(t, testkit.Err("NOAUTH Authentication required."), c.Do("PING"), "a password: served, once authenticated")
	require.Equal(t, testkit.OK, c.Do("AUTH", "pw"))
	require.Equal(t, testkit.OK, c.Do("ACL", "SETUSER", "default", "nopass"))
	require.Equal(t, testkit.Simple("PONG"), c.Do("PING"), "a connection accepted stays, as in Redis")
	denied("the password removed: new connections from another host are refused again")

	require.Equal(t, testkit.OK, local.Do("CONFIG", "SET", "protected-mode", "no"))
	require.Equal(t, testkit.Simple("PONG"), outside().Do("PING"), "protected mode off")
	require.Contains(t, local.Do("INFO", "stats"), "\r\nrejected_connections:2\r\n")
}

// nonLoopbackIP returns an address of this machine that is not loopback, or
// skips the test.
func nonLoopbackIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() && !strings.HasPrefix(n.IP.String(), "fe80") {
			return n.IP.String()
		}
	}
	t.Skip("this machine has no address but loopback ones: a connection from another host cannot be made here")
	return ""
}
