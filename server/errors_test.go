package server

import (
	"strings"
	"testing"
)

func argv(args ...string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

// errUnknownCommand words the error as Redis 7's processCommand does,
// quoting arguments with "'%.*s' " while fewer than 128 bytes are quoted.
func TestErrUnknownCommand(t *testing.T) {
	x := func(n int) string { return strings.Repeat("x", n) }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"foo"}, "ERR unknown command 'foo', with args beginning with: "},
		{[]string{"foo", "a", "b"}, "ERR unknown command 'foo', with args beginning with: 'a' 'b' "},
		{[]string{"FoO", ""}, "ERR unknown command 'FoO', with args beginning with: '' "},
		// The name is clipped to 128 bytes.
		{[]string{x(200)}, "ERR unknown command '" + x(128) + "', with args beginning with: "},
		// One long argument fills the 128 bytes: later ones are dropped.
		{[]string{"foo", x(200), "next"}, "ERR unknown command 'foo', with args beginning with: '" + x(128) + "' "},
		// 60 + 3 + 60 + 3 = 126 bytes quoted: the third gets the 2 left.
		{[]string{"foo", x(60), x(60), "abcdef", "never"},
			"ERR unknown command 'foo', with args beginning with: '" + x(60) + "' '" + x(60) + "' 'ab' "},
		// Exactly 128 quoted: nothing more.
		{[]string{"foo", x(125), "next"}, "ERR unknown command 'foo', with args beginning with: '" + x(125) + "' "},
		// 127 quoted: the next argument still starts, with room for one byte.
		{[]string{"foo", x(124), "next"}, "ERR unknown command 'foo', with args beginning with: '" + x(124) + "' 'n' "},
	} {
		if got := errUnknownCommand(argv(c.args...)); got != c.want {
			t.Errorf("errUnknownCommand(%.40q) =\n %q\nwant\n %q", c.args, got, c.want)
		}
	}
}

func TestErrWrongArgsAndUnknownSubcommand(t *testing.T) {
	if got, want := errWrongArgs("cl.throttle"), "ERR wrong number of arguments for 'cl.throttle' command"; got != want {
		t.Errorf("errWrongArgs = %q want %q", got, want)
	}
	if got, want := errWrongArgs("client|setname"), "ERR wrong number of arguments for 'client|setname' command"; got != want {
		t.Errorf("errWrongArgs = %q want %q", got, want)
	}
	if got, want := errUnknownSubcommand([]byte("Frob"), "CLIENT"), "ERR unknown subcommand 'Frob'. Try CLIENT HELP."; got != want {
		t.Errorf("errUnknownSubcommand = %q want %q", got, want)
	}
	long := strings.Repeat("y", 300)
	if got, want := errUnknownSubcommand([]byte(long), "CONFIG"), "ERR unknown subcommand '"+long[:128]+"'. Try CONFIG HELP."; got != want {
		t.Errorf("errUnknownSubcommand(300 bytes) = %q want %q", got, want)
	}
}

// Every error constant carries a Redis prefix and fits on one line.
func TestErrorTextsHaveAPrefix(t *testing.T) {
	for _, e := range []string{
		errNoAuth, errHelloNoAuth, errWrongPass, errAuthNoPassword, errNoProto, errSyntax, errNotInteger,
		errDBIndex, errInvalidCursor, errClientName, errNoSuchClient, errTracking, errShutdownSave,
		errBurstNotInteger, errCountNotInteger, errPeriodNotInteger, errQuantityNotInteger,
		errNegativeBurst, errNegativeCount, errNegativePeriod, errZeroRate, errNegativeQuantity,
		errOutOfRange, errWrongType,
	} {
		prefix, _, _ := strings.Cut(e, " ")
		if prefix != strings.ToUpper(prefix) || prefix == "" || strings.ContainsAny(e, "\r\n") {
			t.Errorf("%q: want an upper-case prefix word and a single line", e)
		}
	}
}
