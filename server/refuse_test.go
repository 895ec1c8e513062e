package server

import (
	"net"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Protected mode's question, as Redis 7 asks it of a connection: does it
// come from this host? An IP loopback address (127.0.0.0/8, ::1, IPv4
// loopback mapped into IPv6) or a Unix socket does; nothing else.
func TestLocalPeer(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:50000":      true,
		"127.8.9.10:1":         true,
		"[::1]:6379":           true,
		"[::ffff:127.0.0.1]:1": true,
		"10.0.0.1:1":           false,
		"192.0.2.2:6379":       false,
		"[2001:db8::1]:1":      false,
		"[fe80::1%eth0]:1":     false,
		"[::ffff:10.0.0.1]:1":  false,
		"0.0.0.0:1":            false,
		"localhost:1":          false, // a name is never an address accept sees
	} {
		require.Equal(t, want, localPeer(&fakeConn{addr: addr}), addr)
	}

	sock := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer ln.Close()
	client, err := net.Dial("unix", sock)
	require.NoError(t, err)
	defer client.Close()
	nc, err := ln.Accept()
	require.NoError(t, err)
	defer nc.Close()
	require.True(t, localPeer(netConn{nc}), "a Unix socket")
}

// With protected mode on, a connection from another host is refused at
// accept while the default user has no password, and only then: the
// check follows the password as ACL SETUSER changes it, and CONFIG SET
// protected-mode. Loopback connections are always accepted. CONFIG GET
// reports the setting in force.
func TestProtectedModeRefusesOtherHostsWithoutAPassword(t *testing.T) {
	tc := newTestClient(t, Config{ProtectedMode: true})
	require.Equal(t, ok, tc.do("ACL", "SETUSER", "admin", "on", ">a", "+@all", "~*"))
	require.Equal(t, ok, tc.do("AUTH", "admin", "a")) // not the default user, which the test turns off
	accepts := func(addr string) bool { return tc.srv.acceptFake(&fakeConn{Writer: newFakeConn().Writer, addr: addr}) }
	require.Equal(t, "*2\r\n"+bulk("protected-mode")+bulk("yes"), tc.do("CONFIG", "GET", "protected-mode"))
	require.False(t, accepts("192.0.2.7:40000"), "no password: another host is refused")
	require.False(t, accepts("[2001:db8::7]:40000"))
	require.True(t, accepts("127.0.0.1:40000"))
	require.True(t, accepts("[::1]:40000"))
	require.Equal(t, int64(2), tc.srv.stats.rejectedConnections.Load(), "counted as Redis counts them: rejected_connections")

	require.Equal(t, ok, tc.do("ACL", "SETUSER", "default", ">pw"))
	require.True(t, accepts("192.0.2.7:40000"), "a password: accepted, to AUTH")
	require.Equal(t, ok, tc.do("ACL", "SETUSER", "default", "nopass"))
	require.False(t, accepts("192.0.2.7:40000"), "the password removed: refused again")
	require.Equal(t, ok, tc.do("ACL", "SETUSER", "default", "off"))
	require.False(t, accepts("192.0.2.7:40000"), "off but nopass: refused, as Redis, which asks only whether it has no password")

	require.Equal(t, ok, tc.do("CONFIG", "SET", "protected-mode", "no"))
	require.Equal(t, "*2\r\n"+bulk("protected-mode")+bulk("no"), tc.do("CONFIG", "GET", "protected-mode"))
	require.True(t, accepts("192.0.2.7:40000"), "protected mode off")
	require.Equal(t, wireErr("ERR CONFIG SET failed (possibly related to argument 'protected-mode') - argument must be 'yes' or 'no'"),
		tc.do("CONFIG", "SET", "protected-mode", "maybe"))
	require.Equal(t, ok, tc.do("CONFIG", "SET", "PROTECTED-MODE", "YES"))
	require.False(t, accepts("192.0.2.7:40000"))

	require.True(t, newTestClient(t, Config{}).srv.acceptFake(&fakeConn{Writer: newFakeConn().Writer, addr: "192.0.2.7:1"}),
		"the zero Config: off")
}

// netConn is a connection of which localPeer reads nc's addresses.
type netConn struct{ net.Conn }

func (c netConn) RemoteAddr() string { return c.Conn.RemoteAddr().String() }
func (c netConn) NetConn() net.Conn  { return c.Conn }
