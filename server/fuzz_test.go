package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/redcon"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/storage"
)

// Fuzz tests of the server. Seeds recorded from real clients (go-redis,
// rueidis, redis-cli, redis-benchmark) are in testdata/fuzz/<name>/, written
// by TestRecordFuzzSeeds; plain `go test` replays them,
// and every crasher the fuzzer found, kept beside them. The reader's own
// fuzzers are in package resp.

// fuzzServer is a server shared by every run of a fuzz target in a
// process, with a connection that must keep working whatever the fuzzer
// sends on others.
type fuzzServer struct {
	once      sync.Once
	pass      string
	addr      string
	bystander net.Conn
	err       error
}

var openFuzzServer, lockedFuzzServer = &fuzzServer{}, &fuzzServer{pass: "pw"}

func (fs *fuzzServer) start() (string, net.Conn, error) {
	fs.once.Do(func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fs.err = err
			return
		}
		srv := New(Config{RequirePass: fs.pass, Limits: Limits{MaxBulkLen: 4096, MaxQueryLen: 64 << 10, MaxOutput: 1 << 20}},
			storage.New(storage.Config{Shards: 4}))
		go func() { _ = srv.Serve(ln) }()
		fs.addr = ln.Addr().String()
		if fs.bystander, fs.err = net.Dial("tcp", fs.addr); fs.err == nil && fs.pass != "" {
			_, fs.err = io.WriteString(fs.bystander, "AUTH "+fs.pass+"\r\n")
		}
	})
	return fs.addr, fs.bystander, fs.err
}

// FuzzServerConn sends any bytes on a connection to a real server over
// loopback: the server must not crash, must answer only well-formed RESP,
// and must keep serving its other connections.
func FuzzServerConn(f *testing.F) {
	f.Add([]byte("PING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n"))
	f.Add([]byte("*5\r\n$11\r\nCL.THROTTLE\r\n$1\r\nk\r\n$1\r\n4\r\n$1\r\n1\r\n$1\r\n1\r\nHELLO 3\r\nCL.THROTTLE k 4 1 1\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzConn(t, openFuzzServer, data) })
}

// FuzzServerConnBeforeAuth is FuzzServerConn on a server with a password,
// where Redis's unauthenticated limits apply until AUTH pw, which lifts them
// for the very next command.
func FuzzServerConnBeforeAuth(f *testing.F) {
	f.Add([]byte("AUTH pw\r\n*11\r\n$1\r\na\r\n"))
	f.Add([]byte("PING\r\n*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n*2\r\n$4\r\nECHO\r\n$20000\r\n"))
	f.Add([]byte("HELLO 3 AUTH default pw\r\nCL.THROTTLE k 4 1 1\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzConn(t, lockedFuzzServer, data) })
}

func fuzzConn(t *testing.T, fs *fuzzServer, data []byte) {
	{
		addr, bystander, err := fs.start()
		if err != nil {
			t.Fatal(err)
		}
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.Write(data); err != nil {
			return // the server may close first, and reset
		}
		_ = conn.(*net.TCPConn).CloseWrite()
		replies, _ := io.ReadAll(conn) // a reset is fine: the server closed with input unread
		for rd := bufio.NewReader(bytes.NewReader(replies)); ; {
			reply, err := testkit.ReadReply(rd)
			if errors.Is(err, io.EOF) { // before a reply's first byte: the end
				break
			}
			if err != nil {
				t.Fatalf("reply %q is not RESP: %v (of %q)", reply, err, replies)
			}
		}
		_ = bystander.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(bystander, "HELLO 2\r\nPING\r\n"); err != nil {
			t.Fatalf("the bystander connection: %v", err)
		}
		buf := make([]byte, 4096)
		got := ""
		for !bytes.HasSuffix([]byte(got), []byte("+PONG\r\n")) {
			n, err := bystander.Read(buf)
			if err != nil {
				t.Fatalf("the bystander connection: %v (after %q)", err, got)
			}
			got += string(buf[:n])
		}
	}
}

// fuzzCommandNames are the commands FuzzCommands picks from.
var fuzzCommandNames = func() []string {
	var names []string
	for _, cmd := range newCommandTable().sorted {
		names = append(names, cmd.name)
	}
	return names
}()

// decodeFuzzCommands reads FuzzCommands' input: commands separated by 0xff,
// arguments by 0x00. A first argument "@N" (N < 256) names the N-th command
// of the table, so that the fuzzer reaches every command; "@+ms" moves the
// clock forward.
func decodeFuzzCommands(data []byte) [][][]byte {
	var cmds [][][]byte
	for _, raw := range bytes.Split(data, []byte{0xff}) {
		if len(cmds) == 32 {
			break
		}
		args := bytes.Split(raw, []byte{0})
		if len(args) > 64 {
			args = args[:64]
		}
		if a := args[0]; len(a) > 1 && a[0] == '@' && a[1] != '+' {
			if n, err := strconv.Atoi(string(a[1:])); err == nil && n >= 0 {
				args[0] = []byte(fuzzCommandNames[n%len(fuzzCommandNames)])
			}
		}
		cmds = append(cmds, args)
	}
	return cmds
}

// encodeFuzzCommands is decodeFuzzCommands' inverse, for seeds.
func encodeFuzzCommands(cmds [][]string) []byte {
	var b []byte
	for i, args := range cmds {
		if i > 0 {
			b = append(b, 0xff)
		}
		for j, a := range args {
			if j > 0 {
				b = append(b, 0)
			}
			b = append(b, a...)
		}
	}
	return b
}

// FuzzCommands runs any arguments through every command's handler, in
// sequences so that state matters, on a fresh server with a password and
// persistence: no handler may panic, and each command must get exactly one
// well-formed reply (a reply whose header announces a different number of
// elements than follow would desynchronize every client). The rate-limit
// replies must also keep their invariants.
func FuzzCommands(f *testing.F) {
	for _, seed := range [][][]string{
		{{"CL.THROTTLE", "user123", "15", "30", "60"}, {"CL.THROTTLE", "user123", "15", "30", "60", "0"}, {"@+1500"}, {"CL.THROTTLE", "user123", "15", "30", "60", "3"}},
		{{"AUTH", "pw"}, {"HELLO", "3", "AUTH", "default", "pw", "SETNAME", "fuzz"}, {"CLIENT", "LIST"}},
		{{"SCAN", "0", "MATCH", "k*", "COUNT", "10"}, {"KEYS", "*"}, {"TTL", "k"}, {"PTTL", "k"}, {"GET", "k"}, {"TYPE", "k"}},
		{{"COMMAND", "DOCS", "cl.throttle"}, {"COMMAND", "GETKEYS", "CL.THROTTLE", "k", "1", "1", "1"}, {"CONFIG", "GET", "*"}},
		{{"GCRA", "g", "4", "2", "0.5"}, {"GCRA", "g", "4", "2", "0.5", "TOKENS", "3"}, {"@+250"}, {"GCRA", "g", "0", "1", "1e-9", "TOKENS", "9"}, {"CL.THROTTLE", "g", "4", "1", "1"}},
		{{"CL.RESERVE", "r", "2", "10", "1", "MAXWAIT", "500"}, {"CL.RESERVE", "r", "2", "10", "1", "3", "MAXWAIT", "500"}, {"@+90"}, {"CL.RESERVE", "r", "2", "10", "1", "0"}},
		{{"CL.WINDOW", "w", "3", "10"}, {"CL.WINDOW", "w", "3", "10", "2"}, {"@+9999"}, {"CL.WINDOW", "w", "3", "10", "PRECISION", "5"}, {"CL.WINDOW", "w", "3", "10", "1", "PRECISION", "1"}, {"GCRA", "w", "1", "1", "1"}},
	} {
		f.Add(encodeFuzzCommands(seed))
	}
	for i := range fuzzCommandNames {
		f.Add(encodeFuzzCommands([][]string{{"@" + strconv.Itoa(i), "k", "1", "1", "1"}}))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		now := t0
		srv := New(Config{RequirePass: "pw", Now: func() time.Time { return now }, Persistence: nopPersistence{}},
			storage.New(storage.Config{Shards: 1}))
		conn := newFakeConn()
		if !srv.acceptFake(conn) {
			t.Fatal("not accepted")
		}
		c := conn.client()
		c.session.authed = true
		for _, args := range decodeFuzzCommands(data) {
			if a := args[0]; len(a) > 2 && a[0] == '@' && a[1] == '+' {
				if ms, err := strconv.Atoi(string(a[2:])); err == nil && ms >= 0 {
					now = now.Add(time.Duration(ms%100000) * time.Millisecond)
				}
				continue
			}
			srv.handle(conn, redcon.Command{Args: args})
			out := conn.take()
			if c.closing() {
				return
			}
			if err := checkReplyCount(args, []byte(out)); err != nil {
				t.Fatalf("%q answered %q: %v", args, out, err)
			}
			checkDecision(t, args, out)
		}
	})
}

// checkReplyCount checks that out is exactly one well-formed reply, or, for
// the (un)subscribe commands, as Redis answers them, one for each channel or
// pattern named (one if none is named), or one error.
func checkReplyCount(args [][]byte, out []byte) error {
	want := 1
	name := string(bytes.ToLower(args[0]))
	if strings.HasSuffix(name, "subscribe") && len(out) > 0 && out[0] != '-' {
		want = max(1, len(args)-1)
	}
	rd := bufio.NewReader(bytes.NewReader(out))
	for i := range want {
		if _, err := testkit.ReadReply(rd); err != nil {
			return fmt.Errorf("reply %d of %d: %w", i+1, want, err)
		}
	}
	if _, err := rd.Peek(1); err == nil {
		return fmt.Errorf("more than %d replies", want)
	}
	return nil
}

// checkDecision checks a rate-limit reply's invariants: 0 or 1 for limited,
// 0 <= remaining <= limit, retry_after -1 when allowed (CL.RESERVE's wait, in
// that place, at least 0 when allowed and above 0 or -1 when limited).
func checkDecision(t *testing.T, args [][]byte, out string) {
	if !bytes.HasPrefix(bytes.ToLower(args[0]), []byte("cl.")) && !bytes.EqualFold(args[0], []byte("gcra")) {
		return
	}
	if out[0] != '*' {
		return
	}
	var v []int64
	for _, line := range bytes.Split([]byte(out), []byte("\r\n"))[1:] {
		if len(line) > 1 && line[0] == ':' {
			n, _ := strconv.ParseInt(string(line[1:]), 10, 64)
			v = append(v, n)
		}
	}
	if len(v) != 5 {
		t.Fatalf("%q answered %q: not five integers", args, out)
	}
	limited, limit, remaining, retry := v[0], v[1], v[2], v[3]
	if limited != 0 && limited != 1 || remaining < 0 || remaining > limit || v[4] < 0 {
		t.Fatalf("%q answered %v: limited in {0,1}, 0 <= remaining <= limit, reset_after >= 0", args, v)
	}
	if bytes.EqualFold(args[0], []byte("cl.reserve")) {
		if limited == 0 && retry < 0 || limited == 1 && retry == 0 || retry < -1 {
			t.Fatalf("%q answered %v: a wait >= 0 when allowed, > 0 or -1 when limited", args, v)
		}
	} else if limited == 0 && retry != -1 || retry < -1 {
		t.Fatalf("%q answered %v: retry_after -1 when allowed, >= -1 when limited", args, v)
	}
}

// nopPersistence lets SAVE, BGSAVE and LASTSAVE run without a disk.
type nopPersistence struct{}

func (nopPersistence) Flush() error         { return nil }
func (nopPersistence) BackgroundSave() bool { return true }
func (nopPersistence) Sync() error          { return nil }
func (nopPersistence) Pending() int         { return 0 }
func (nopPersistence) InFlight() int        { return 0 }
func (nopPersistence) Failing() bool        { return false }
func (nopPersistence) Stats() storage.FlushStats {
	return storage.FlushStats{LastOK: true, DiskState: "ok"}
}
