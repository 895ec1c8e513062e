package server

import (
	"strconv"
	"testing"
)

func helloMap(proto, id int64) string {
	b := func(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
	i := func(n int64) string { return ":" + strconv.FormatInt(n, 10) + "\r\n" }
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
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"NOSUCH"}, "-ERR unknown command 'NOSUCH', with args beginning with: \r\n"},
		{[]string{"GET"}, "-ERR wrong number of arguments for 'get' command\r\n"},
		{[]string{"GET", "k"}, errReply(errNoAuth)},
		{[]string{"CL.THROTTLE", "k", "1", "1", "1"}, errReply(errNoAuth)},
		{[]string{"CLIENT", "TRACKING", "on"}, errReply(errNoAuth)},
		{[]string{"HELLO", "3"}, errReply(errHelloNoAuth)},
		{[]string{"AUTH", "nope"}, errReply(errWrongPass)},
		{[]string{"HELLO", "3", "AUTH", "default", "nope"}, errReply(errWrongPass)},
		{[]string{"PING"}, errReply(errNoAuth)},
		{[]string{"HELLO", "3", "AUTH", "default", "pw"}, helloMap(3, 1)},
		{[]string{"PING"}, "+PONG\r\n"},
		{[]string{"GET", "k"}, "_\r\n"},
	} {
		if got := tc.do(c.args...); got != c.want {
			t.Errorf("%q = %q want %q", c.args, got, c.want)
		}
	}

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
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"HELLO"}, helloMap(2, 1)},
		{[]string{"HELLO", "3"}, helloMap(3, 1)},
		{[]string{"CLIENT", "GETNAME"}, "_\r\n"},
		{[]string{"HELLO", "3", "SETNAME", "svc"}, helloMap(3, 1)},
		{[]string{"CLIENT", "GETNAME"}, "$3\r\nsvc\r\n"},
		{[]string{"HELLO", "2"}, helloMap(2, 1)},
		{[]string{"CLIENT", "SETNAME", ""}, "+OK\r\n"},
		{[]string{"CLIENT", "GETNAME"}, "$-1\r\n"},
		{[]string{"HELLO", "0"}, "-NOPROTO unsupported protocol version\r\n"},
		{[]string{"HELLO", "+3"}, "-ERR Protocol version is not an integer or out of range\r\n"},
		{[]string{"HELLO", "3", "SETNAME"}, "-ERR Syntax error in HELLO option 'SETNAME'\r\n"},
	} {
		if got := tc.do(c.args...); got != c.want {
			t.Errorf("%q = %q want %q", c.args, got, c.want)
		}
	}
	if tc.c.session.resp != 2 {
		t.Errorf("protocol after failed HELLOs = %d want 2", tc.c.session.resp)
	}
}
