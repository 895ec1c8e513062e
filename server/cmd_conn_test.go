package server

import (
	"testing"

	"github.com/redcell/redcell/internal/testkit"
)

func helloMap(proto, id int64) string {
	b, i := testkit.Bulk, testkit.Int
	body := b("server") + b("redis") + b("version") + b(RedisVersion) + b("proto") + i(proto) +
		b("id") + i(id) + b("mode") + b("standalone") + b("role") + b("master") + b("modules") + "*0\r\n"
	if proto == 3 {
		return "%7\r\n" + body
	}
	return "*14\r\n" + body
}

// With a password, the dispatcher checks the command, then its arity, then
// authentication, as Redis's processCommand does; AUTH, HELLO and QUIT run
// unauthenticated.
func TestAuthOrder(t *testing.T) {
	tc := newTestClient(t, Config{RequirePass: "pw"})
	testkit.RunSteps(t, []testkit.Step{
		{Args: []string{"NOSUCH"}, Want: "-ERR unknown command 'NOSUCH', with args beginning with: \r\n"},
		{Args: []string{"GET"}, Want: "-ERR wrong number of arguments for 'get' command\r\n"},
		{Args: []string{"GET", "k"}, Want: errReply(errNoAuth)},
		{Args: []string{"CL.THROTTLE", "k", "1", "1", "1"}, Want: errReply(errNoAuth)},
		{Args: []string{"CLIENT", "TRACKING", "on"}, Want: errReply(errNoAuth)},
		{Args: []string{"HELLO", "3"}, Want: errReply(errHelloNoAuth)},
		{Args: []string{"AUTH", "nope"}, Want: errReply(errWrongPass)},
		{Args: []string{"HELLO", "3", "AUTH", "default", "nope"}, Want: errReply(errWrongPass)},
		{Args: []string{"PING"}, Want: errReply(errNoAuth)},
		{Args: []string{"HELLO", "3", "AUTH", "default", "pw"}, Want: helloMap(3, 1)},
		{Args: []string{"PING"}, Want: "+PONG\r\n"},
		{Args: []string{"GET", "k"}, Want: "_\r\n"},
	}, tc.do, nil)

	tc2 := newTestClient(t, Config{RequirePass: "pw"})
	if got := tc2.do("QUIT"); got != "+OK\r\n" || !tc2.conn.closed {
		t.Errorf("QUIT before AUTH = %q, closed %v; want +OK and closed", got, tc2.conn.closed)
	}
	if got := tc2.do("AUTH", "pw"); got != "" {
		t.Errorf("a command after QUIT ran: %q", got)
	}
}

func TestHelloSwitchesProtocol(t *testing.T) {
	tc := newTestClient(t, Config{})
	testkit.RunSteps(t, []testkit.Step{
		{Args: []string{"HELLO"}, Want: helloMap(2, 1)},
		{Args: []string{"HELLO", "3"}, Want: helloMap(3, 1)},
		{Args: []string{"CLIENT", "GETNAME"}, Want: "_\r\n"},
		{Args: []string{"HELLO", "3", "SETNAME", "svc"}, Want: helloMap(3, 1)},
		{Args: []string{"CLIENT", "GETNAME"}, Want: "$3\r\nsvc\r\n"},
		{Args: []string{"HELLO", "2"}, Want: helloMap(2, 1)},
		{Args: []string{"CLIENT", "SETNAME", ""}, Want: "+OK\r\n"},
		{Args: []string{"CLIENT", "GETNAME"}, Want: "$-1\r\n"},
		{Args: []string{"HELLO", "0"}, Want: "-NOPROTO unsupported protocol version\r\n"},
		{Args: []string{"HELLO", "+3"}, Want: "-ERR Protocol version is not an integer or out of range\r\n"},
		{Args: []string{"HELLO", "3", "SETNAME"}, Want: "-ERR Syntax error in HELLO option 'SETNAME'\r\n"},
	}, tc.do, nil)
	if tc.c.session.resp != 2 {
		t.Errorf("protocol after failed HELLOs = %d want 2", tc.c.session.resp)
	}
}
