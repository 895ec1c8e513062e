package testkit

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"
)

// Every kind of reply reads back as the bytes it came as, and parses into
// its kind, text and elements.
func TestReadReplyAndParse(t *testing.T) {
	for _, c := range []struct{ raw, parsed string }{
		{"+OK\r\n", "+OK"},
		{"+\r\n", "+"},
		{"-ERR no\r\n", "-ERR no"},
		{":-12\r\n", ":-12"},
		{"$3\r\na\r\n\r\n", "$a\r\n"},
		{"$0\r\n\r\n", "$"},
		{"$-1\r\n", "$"},
		{"*-1\r\n", "*[]"},
		{"*0\r\n", "*[]"},
		{"*2\r\n:1\r\n*1\r\n$1\r\nx\r\n", "*[:1 *[$x]]"},
		{"_\r\n", "_"},
		{",1.5\r\n", ",1.5"},
		{"#t\r\n", "#t"},
		{"(12345678901234567890\r\n", "(12345678901234567890"},
		{"=9\r\ntxt:a b c\r\n", "=a b c"},
		{"!5\r\nERR x\r\n", "!ERR x"},
		{"%1\r\n+k\r\n:1\r\n", "%[+k :1]"},
		{"~2\r\n+a\r\n+b\r\n", "~[+a +b]"},
		{">2\r\n$7\r\nmessage\r\n$2\r\nhi\r\n", ">[$message $hi]"},
		{"|1\r\n+ttl\r\n:3\r\n+v\r\n", ""}, // an attribute, then its reply
	} {
		raw, err := ReadReply(bufio.NewReader(strings.NewReader(c.raw)))
		require.NoError(t, err, "%q", c.raw)
		if c.parsed == "" { // the attribute's own reply follows it
			require.Equal(t, "|1\r\n+ttl\r\n:3\r\n", raw)
			continue
		}
		require.Equal(t, c.raw, raw)
		// Read one byte at a time, the same.
		raw, err = ReadReply(bufio.NewReaderSize(iotest.OneByteReader(strings.NewReader(c.raw)), 16))
		require.NoError(t, err)
		require.Equal(t, c.raw, raw)
		v, err := Parse(c.raw)
		require.NoError(t, err, "%q", c.raw)
		require.Equal(t, c.parsed, v.String(), "%q", c.raw)
	}
}

// What no server may send is refused: the reader returns what it read and
// an error saying why.
func TestReadReplyRefusesMalformedReplies(t *testing.T) {
	for _, c := range []struct{ raw, err string }{
		{"+OK\n", "malformed reply: a line"},
		{"+O\rK\r\n", "malformed reply: a line"},
		{"\r\n", "malformed reply: a line"},
		{":1.5\r\n", "an integer"},
		{"$-2\r\n", "a length"},
		{"$x\r\n", "a length"},
		{"*-5\r\n", "a length"},
		{"$3\r\nabcd\r\n", "not ended by CRLF"},
		{"?1\r\n", "unknown type"},
		{"*2\r\n:1\r\n:x\r\n", "element 1: testkit: malformed reply: an integer"},
		{"$3\r\nab", "unexpected EOF"},
		{"*2\r\n:1\r\n", "element 1: unexpected EOF"},
		{"+OK", "unexpected EOF"},
	} {
		raw, err := ReadReply(bufio.NewReader(strings.NewReader(c.raw)))
		require.ErrorContains(t, err, c.err, "%q", c.raw)
		require.True(t, strings.HasPrefix(c.raw, raw), "%q: returned %q, what it read", c.raw, raw)
	}
	_, err := ReadReply(bufio.NewReader(strings.NewReader("")))
	require.ErrorIs(t, err, io.EOF)
	_, err = Parse("+OK\r\n+OK\r\n")
	require.ErrorContains(t, err, `"+OK\r\n" after the reply`)
}

func TestWireForms(t *testing.T) {
	require.Equal(t, "*2\r\n$3\r\nGET\r\n$0\r\n\r\n", Command("GET", ""))
	require.Equal(t, "*3\r\n:0\r\n:-1\r\n:5\r\n", Ints(0, -1, 5))
	require.Equal(t, "*2\r\n$1\r\na\r\n$0\r\n\r\n", Bulks("a", ""))
	require.Equal(t, "*2\r\n+a b\r\n+c\r\n", Simples("a b", "c"))
	require.Equal(t, "-ERR x\r\n", Err("ERR x"))
	require.Equal(t, ":7\r\n", Int(7))
	require.Equal(t, "$2\r\nhi\r\n", Bulk("hi"))
}

// The command reader takes multibulk commands however they are cut into
// reads, and refuses anything else a node would not send.
func TestCommandReader(t *testing.T) {
	in := Command("REPLCONF", "listening-port", "7777") + Command("PSYNC", "?", "-1") + Command("SET", strings.Repeat("k", 10000), "")
	for _, r := range []io.Reader{strings.NewReader(in), iotest.OneByteReader(strings.NewReader(in)), iotest.HalfReader(strings.NewReader(in))} {
		rd := NewCommandReader(r)
		for _, want := range [][]string{{"REPLCONF", "listening-port", "7777"}, {"PSYNC", "?", "-1"}, {"SET", strings.Repeat("k", 10000), ""}} {
			got, err := rd.Next()
			require.NoError(t, err)
			require.Equal(t, want, got)
		}
		_, err := rd.Next()
		require.ErrorIs(t, err, io.EOF)
	}
	for _, bad := range []string{"PING\r\n", "*0\r\n", "\r\n", "*1\r\n$-1\r\n", "*1\r\n:1\r\n"} {
		rd := NewCommandReader(strings.NewReader(Command("PING") + bad + Command("PING")))
		got, err := rd.Next()
		require.NoError(t, err)
		require.Equal(t, []string{"PING"}, got)
		_, err = rd.Next()
		require.Error(t, err, "%q", bad)
		require.NotErrorIs(t, err, io.EOF, "%q", bad)
	}
}

// A Peer answers each command with what its function returns, in order,
// and closes the connection where it returns "".
func TestPeerAndConn(t *testing.T) {
	p := StartPeer(t, func(args []string) string {
		switch args[0] {
		case "QUIT":
			return ""
		case "ECHO":
			return Bulk(args[1])
		}
		return Simple("PONG")
	})
	c := Dial(t, p.Addr)
	require.Equal(t, "+PONG\r\n", c.Do("PING"))
	require.Equal(t, Bulk("a\r\nb"), c.Do("ECHO", "a\r\nb"))
	c.Write(Command("QUIT"))
	c.ExpectClosed()
	require.Equal(t, [][]string{{"PING"}, {"ECHO", "a\r\nb"}, {"QUIT"}}, p.Drain())

	require.Equal(t, "+PONG\r\n$1\r\nx\r\n", Converse(t, p.Addr, Command("PING")+Command("ECHO", "x")+Command("QUIT")+Command("PING")))
	require.Equal(t, "", Converse(t, p.Addr, "PING\r\n"), "an inline command: the peer closes the connection")
	require.Equal(t, [][]string{{"PING"}, {"ECHO", "x"}, {"QUIT"}}, p.Drain())
}

// recorder is a testing.TB that keeps what Errorf reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// RunSteps reports every step whose reply differs, with the clock's moment
// when it sets one.
func TestRunSteps(t *testing.T) {
	var at []string
	do := func(args ...string) string { return Int(int64(len(args))) }
	steps := []Step{{0, []string{"A"}, ":1\r\n"}, {5, []string{"A", "B"}, ":3\r\n"}, {7, []string{"C"}, ":0\r\n"}}
	r := &recorder{TB: t}
	RunSteps(r, steps, do, nil)
	require.Equal(t, []string{
		`step 1: ["A" "B"] = ":2\r\n" want ":3\r\n"`,
		`step 2: ["C"] = ":1\r\n" want ":0\r\n"`,
	}, r.errs)
	r = &recorder{TB: t}
	RunSteps(r, steps, do, func(d time.Duration) { at = append(at, d.String()) })
	require.Equal(t, []string{"0s", "5ns", "7ns"}, at)
	require.Equal(t, `step 1: at 5ns ["A" "B"] = ":2\r\n" want ":3\r\n"`, r.errs[0])
}

// The kit is for tests: no package's own code imports it.
func TestOnlyTestsImportTheKit(t *testing.T) {
	const self = "github.com/redcell/redcell/internal/testkit"
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") && path != "../.." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.Contains(filepath.ToSlash(path), "internal/testkit/harness/") {
			return nil // a test, or the kit's own harness (internal/testkit/harness), for tests alone too
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == self || p == self+"/harness" {
				t.Errorf("%s imports %s, which is for tests alone", path, self)
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, checked, 50, "the walk reached the module's packages")
}
