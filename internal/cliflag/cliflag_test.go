package cliflag

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type settings struct {
	dir      string
	port     int
	memory   bool
	interval time.Duration
	n        uint
}

func newFlagSet(s *settings) *flag.FlagSet {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.StringVar(&s.dir, "dir", "./data", "")
	fs.StringVar(&s.dir, "data-dir", "./data", "")
	fs.IntVar(&s.port, "port", 6379, "")
	fs.BoolVar(&s.memory, "in-memory", false, "")
	fs.DurationVar(&s.interval, "flush-interval", time.Second, "")
	fs.UintVar(&s.n, "count", 1, "")
	return fs
}

// What flag.FlagSet.Parse accepts, Parse accepts alike.
func TestParseAcceptsWhatTheFlagPackageDoes(t *testing.T) {
	for _, c := range []struct {
		args  []string
		want  settings
		given []string
		rest  []string
	}{
		{nil, settings{"./data", 6379, false, time.Second, 1}, nil, nil},
		{[]string{"--dir", "x", "-port=7", "--in-memory", "-flush-interval", "0"}, settings{"x", 7, true, 0, 1},
			[]string{"dir", "port", "in-memory", "flush-interval"}, nil},
		{[]string{"--in-memory=false", "--data-dir=y", "extra", "--port", "1"}, settings{"y", 6379, false, time.Second, 1},
			[]string{"in-memory", "data-dir"}, []string{"extra", "--port", "1"}},
		{[]string{"--port", "1", "--", "--dir"}, settings{"./data", 1, false, time.Second, 1}, []string{"port"}, []string{"--dir"}},
		{[]string{"-", "--port", "1"}, settings{"./data", 6379, false, time.Second, 1}, nil, []string{"-", "--port", "1"}},
		{[]string{"--dir="}, settings{"", 6379, false, time.Second, 1}, []string{"dir"}, nil},
	} {
		var got, std settings
		fs, stdfs := newFlagSet(&got), newFlagSet(&std)
		require.NoError(t, fs.Set("count", "2"), "set before, as the environment is")
		require.NoError(t, stdfs.Set("count", "2"))
		c.want.n = 2
		given, rest, err := Parse(fs, c.args)
		require.NoError(t, err, "%q", c.args)
		require.Equal(t, c.want, got, "%q", c.args)
		require.Equal(t, c.given, given, "%q", c.args)
		require.Equal(t, c.rest, rest, "%q", c.args)
		require.NoError(t, stdfs.Parse(c.args))
		require.Equal(t, std, got, "%q: as flag.FlagSet.Parse", c.args)
		require.Equal(t, len(stdfs.Args()), len(rest), "%q: as flag.FlagSet.Parse", c.args)
	}
}

// Errors name a flag as --help and docs/configuration.md write it, with two dashes,
// say what the value should look like, and suggest the nearest flag.
func TestParseErrorsNameFlagsWithTwoDashes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--datadir", "x"}, "unknown flag --datadir: did you mean --data-dir?"},
		{[]string{"-datadir"}, "unknown flag --datadir: did you mean --data-dir?"},
		{[]string{"--prot", "1"}, "unknown flag --prot: did you mean --port?"},
		{[]string{"--Port=1"}, "unknown flag --Port: did you mean --port?"},
		{[]string{"--bogus"}, "unknown flag --bogus"},
		{[]string{"--port"}, "--port needs a value"},
		{[]string{"---port", "1"}, "bad flag syntax: ---port"},
		{[]string{"--=1"}, "bad flag syntax: --=1"},
		{[]string{"--port", "abc"}, `invalid value "abc" for --port: must be a whole number`},
		{[]string{"--port", "99999999999999999999"}, `invalid value "99999999999999999999" for --port: a whole number out of range`},
		{[]string{"--count", "-1"}, `invalid value "-1" for --count: must be a whole number, not negative`},
		{[]string{"--in-memory=perhaps"}, `invalid value "perhaps" for --in-memory: must be true or false`},
		{[]string{"--flush-interval", "5"}, `invalid value "5" for --flush-interval: a duration needs a unit, as 1s or 500ms`},
		{[]string{"--flush-interval=1.5"}, `invalid value "1.5" for --flush-interval: a duration needs a unit, as 1s or 500ms`},
		{[]string{"--flush-interval", "soon"}, `invalid value "soon" for --flush-interval: a duration is a number and a unit, as 1s, 500ms or 1m30s`},
		{[]string{"--flush-interval", "5sec"}, `invalid value "5sec" for --flush-interval: unknown unit "sec" in a duration: the units are ns, us, ms, s, m and h`},
		{[]string{"--flush-interval", "9999999h"}, `invalid value "9999999h" for --flush-interval: a duration out of range: at most 2562047h0m0s`},
	} {
		var s settings
		var out strings.Builder
		fs := newFlagSet(&s)
		fs.SetOutput(&out)
		_, _, err := Parse(fs, c.args)
		require.EqualError(t, err, c.want, "%q", c.args)
		require.Empty(t, out.String(), "prints nothing: the caller prints the error once")
	}
}

// A one-letter flag is written with one dash, as redis-benchmark's -c and
// -P are (the bench tools take them).
func TestParseErrorsNameOneLetterFlagsWithOneDash(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-c", "x"}, `invalid value "x" for -c: must be a whole number`},
		{[]string{"--c", "x"}, `invalid value "x" for -c: must be a whole number`},
		{[]string{"-P"}, "-P needs a value"},
		{[]string{"-q"}, "unknown flag -q"},
		{[]string{"-p", "1"}, "unknown flag -p: did you mean -P?"},
		{[]string{"-cc"}, "unknown flag --cc: did you mean -c?"},
		{[]string{"--adr", "x"}, "unknown flag --adr: did you mean --addr?"},
	} {
		fs := flag.NewFlagSet("bench", flag.ContinueOnError)
		fs.Int("c", 50, "")
		fs.Int("P", 16, "")
		fs.String("addr", "", "")
		_, _, err := Parse(fs, c.args)
		require.EqualError(t, err, c.want, "%q", c.args)
	}
}

func TestParseHelp(t *testing.T) {
	for _, arg := range []string{"-h", "--help", "-help"} {
		var s settings
		_, _, err := Parse(newFlagSet(&s), []string{"--port", "1", arg, "--bogus"})
		require.ErrorIs(t, err, flag.ErrHelp, arg)
	}
}

// Set, for the environment's variables, explains a value as Parse does and
// leaves naming where it came from to its caller.
func TestSetExplainsTheValue(t *testing.T) {
	var s settings
	fs := newFlagSet(&s)
	require.NoError(t, Set(fs, "flush-interval", "250ms"))
	require.Equal(t, 250*time.Millisecond, s.interval)
	require.EqualError(t, Set(fs, "flush-interval", "5"), "a duration needs a unit, as 1s or 500ms")
	require.EqualError(t, Set(fs, "port", "x"), "must be a whole number")
	require.EqualError(t, Set(fs, "nope", "x"), "no such flag -nope")
}

func TestNearest(t *testing.T) {
	names := []string{"bind", "port", "dir", "data-dir", "flush-interval", "in-memory", "tls-port"}
	for typed, want := range map[string]string{
		"prot": "port", "PORT": "port", "dr": "dir", "datadir": "data-dir", "data_dir": "data-dir",
		"flushinterval": "flush-interval", "flush-intreval": "flush-interval", "inmemory": "in-memory",
		"tls_port": "tls-port", "bnd": "bind",
		"bogus": "", "unrelated": "", "ports": "port", "portal": "port", "d": "",
	} {
		got, ok := Nearest(typed, names)
		require.Equal(t, want, got, typed)
		require.Equal(t, want != "", ok, typed)
	}
	require.Equal(t, 0, distance("", ""))
	require.Equal(t, 3, distance("abc", ""))
	require.Equal(t, 1, distance("ab", "ba"))
	require.Equal(t, 3, distance("kitten", "sitting"))
}
