package server

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/storage"
)

// appendRepr quotes as Redis's sdscatrepr: printable ASCII as is, \\ and \"
// escaped, \n \r \t \a \b by name, every other byte as \xHH in lower case.
func TestAppendRepr(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", `""`},
		{"cl.throttle", `"cl.throttle"`},
		{"two words ~!", `"two words ~!"`},
		{`a"b\c`, `"a\"b\\c"`},
		{"\n\r\t\a\b", `"\n\r\t\a\b"`},
		{"\x00\x01\x1f\x7f\x80\xff", `"\x00\x01\x1f\x7f\x80\xff"`},
		{"caf\xc3\xa9", `"caf\xc3\xa9"`},
		{"\v\f", `"\x0b\x0c"`},
	} {
		if got := string(appendRepr(nil, []byte(c.in))); got != c.want {
			t.Errorf("appendRepr(%q) = %s want %s", c.in, got, c.want)
		}
	}
}

// A line is "+<seconds>.<6-digit microseconds> [0 <addr>] <args>\r\n", with
// AUTH's and HELLO ... AUTH's credentials redacted.
func TestAppendMonitorLine(t *testing.T) {
	at := time.Unix(1796040000, 7_654_321) // 7654 microseconds
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"PING"}, `"PING"`},
		{[]string{"CL.THROTTLE", "k", "1", "2", "3"}, `"CL.THROTTLE" "k" "1" "2" "3"`},
		{[]string{"AUTH", "pw"}, `"AUTH" "(redacted)"`},
		{[]string{"auth", "user", "pw"}, `"auth" "(redacted)" "(redacted)"`},
		{[]string{"HELLO", "3", "AUTH", "u", "pw"}, `"HELLO" "3" "AUTH" "(redacted)" "(redacted)"`},
		{[]string{"hello", "3", "setname", "auth", "auth", "u", "pw", "SETNAME", "n"}, `"hello" "3" "setname" "auth" "auth" "(redacted)" "(redacted)" "SETNAME" "n"`},
		{[]string{"HELLO", "AUTH", "u", "pw"}, `"HELLO" "AUTH" "(redacted)" "(redacted)"`}, // Redis would show these
		{[]string{"HELLO", "3", "AUTH", "u"}, `"HELLO" "3" "AUTH" "u"`},                    // no password: a syntax error
		{[]string{"ECHO", "auth"}, `"ECHO" "auth"`},
	} {
		got := string(appendMonitorLine(nil, at, "10.0.0.1:5000", argv(c.args...)))
		want := "+1796040000.007654 [0 10.0.0.1:5000] " + c.want + "\r\n"
		if got != want {
			t.Errorf("%q:\n got %q\nwant %q", c.args, got, want)
		}
	}
	for us, want := range map[int]string{0: "000000", 5: "000005", 123456: "123456", 999999: "999999"} {
		got := string(appendMonitorLine(nil, time.Unix(7, int64(us)*1000+999), "a", argv("x")))
		if got != "+7."+want+" [0 a] \"x\"\r\n" {
			t.Errorf("%d microseconds: %q", us, got)
		}
	}
}

// A monitor that reads nothing is disconnected as soon as what waits for
// it would pass its backlog (the output limit), and is fed nothing more:
// the monitor end of a net.Pipe, which holds nothing unread, never read.
func TestMonitorBacklog(t *testing.T) {
	srv := New(Config{Now: func() time.Time { return t0 }, Limits: Limits{MaxOutput: 300}}, storage.New(storage.Config{Shards: 1}))
	client, mon, served := servePipe(t, srv)
	monitor := testkit.NewConn(t, client, 4096)
	require.Equal(t, "+OK\r\n", monitor.DoInline("MONITOR"))
	other := newFakeConn()
	require.True(t, srv.acceptFake(other))
	for i := 0; !mon.killed(); i++ {
		require.Less(t, i, 100, "past 300 bytes of lines unread, the monitor is disconnected")
		srv.handle(other, redconCommand(argv("ECHO", strings.Repeat("x", 40))))
	}
	require.Empty(t, srv.monitorList(), "and is fed no more")
	require.Zero(t, srv.hooks.Load()&hookMonitor)
	<-served
}

// MONITOR turns the command path's monitor hook on; it goes off when the last
// monitor's connection closes, so commands stop paying for the outbox.
func TestMonitorHook(t *testing.T) {
	srv := New(Config{Now: func() time.Time { return t0 }}, storage.New(storage.Config{Shards: 1}))
	client, _, served := servePipe(t, srv)

	monitor := testkit.NewConn(t, client, 4096)
	require.Equal(t, "+OK\r\n", monitor.DoInline("MONITOR"))
	require.Equal(t, uint32(hookMonitor), srv.hooks.Load())

	other := newFakeConn()
	require.True(t, srv.acceptFake(other))
	srv.handle(other, redconCommand(argv("PING")))
	require.Equal(t, "+PONG\r\n", other.take())
	require.Equal(t, "+1795953600.000000 [0 127.0.0.1:50000] \"PING\"\r\n", monitor.Read())

	require.NoError(t, client.Close())
	<-served
	require.Zero(t, srv.hooks.Load())
	require.Empty(t, srv.monitorList())
}

// A monitor whose input is refused gets the refusal after everything queued
// for it, from its outbox's writer: nothing else writes to its connection.
func TestMonitorRefusedByTheReader(t *testing.T) {
	got := serveScript(t, "MONITOR\r\nPING\r\n*1\r\n$-5\r\n", 1<<20)
	require.Equal(t, "+OK\r\n+PONG\r\n+1795953600.000000 [0 127.0.0.1:50000] \"PING\"\r\n-ERR Protocol error: invalid bulk length\r\n", got)
}
