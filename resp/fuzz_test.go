package resp

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
)

// Fuzz tests of the reader. Seeds recorded from real clients (go-redis,
// rueidis, redis-cli, redis-benchmark) are in testdata/fuzz/FuzzReader/,
// written by server's TestRecordFuzzSeeds; plain `go test` replays them, and
// every crasher the fuzzer found, kept beside them.

// fuzzLimits are small, so that the fuzzer reaches every one of them;
// before AUTH, arguments may be longer than UnauthMaxBulkLen, so that the
// fuzzer reaches that one.
var (
	fuzzLimits       = Limits{MaxBulkLen: 512, MaxArgs: 16, MaxInlineLen: 256, MaxQueryLen: 2048}
	fuzzUnauthLimits = Limits{MaxBulkLen: 20000, MaxArgs: 16, MaxInlineLen: 256, MaxQueryLen: 40000}
)

// FuzzReader feeds any bytes to a reader in reads of sizes chunk and vary in
// turn: it must not panic, how the input is split must not change which
// commands it returns or how it refuses, and both must be what the plain
// reference reader below finds in the whole input.
func FuzzReader(f *testing.F) {
	f.Add([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"), uint16(3), uint16(4096))
	f.Add([]byte("PING\r\n*1\r\n$99999999999999999999\r\n"), uint16(1), uint16(7))
	f.Add([]byte("*-1\r\n*0\r\n$\r\n"), uint16(2), uint16(1))
	f.Add([]byte("ECHO \"a\\x41 b\" 'c\\'d'\r\n\n\r\nPING\n"), uint16(5), uint16(16))
	f.Fuzz(func(t *testing.T, data []byte, chunk, vary uint16) {
		fuzzReader(t, fuzzLimits, true, data, chunk, vary)
	})
}

// FuzzReaderBeforeAuth is FuzzReader for a client that has yet to
// authenticate: Redis's smaller limits apply until a command named AUTH.
func FuzzReaderBeforeAuth(f *testing.F) {
	f.Add([]byte("PING\r\n*2\r\n$4\r\nECHO\r\n$20000\r\n"), uint16(100), uint16(4096))
	f.Add([]byte("*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n*11\r\n"), uint16(3), uint16(9))
	f.Add([]byte("AUTH pw\r\n*11\r\n"+strings.Repeat("$1\r\nx\r\n", 11)), uint16(4), uint16(1))
	f.Add([]byte("*2\r\n$4\r\nECHO\r\n$16385\r\n"), uint16(6), uint16(2))
	f.Fuzz(func(t *testing.T, data []byte, chunk, vary uint16) {
		fuzzReader(t, fuzzUnauthLimits, false, data, chunk, vary)
	})
}

func fuzzReader(t *testing.T, lim Limits, authed bool, data []byte, chunk, vary uint16) {
	want, wantErr := referenceRead(data, lim, authed)
	r := NewReader(&splitReader{in: bytes.Clone(data), sizes: []int{int(chunk), int(vary)}}, lim)
	got, err := readAll(r, authed)
	if err == io.EOF {
		err = nil
	}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Fatalf("reads of %d and %d returned %q; the reference, %q", chunk, vary, got, want)
	}
	if fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("reads of %d and %d ended with %v; the reference, %v", chunk, vary, err, wantErr)
	}
	peeking := NewReader(&splitReader{in: bytes.Clone(data), sizes: []int{int(chunk), int(vary)}}, lim)
	gotPeeking, errPeeking := readAllPeeking(t, peeking, authed)
	if errPeeking == io.EOF {
		errPeeking = nil
	}
	if fmt.Sprintf("%q", gotPeeking) != fmt.Sprintf("%q", got) || fmt.Sprint(errPeeking) != fmt.Sprint(err) {
		t.Fatalf("peeking, reads of %d and %d returned %q, %v; without, %q, %v", chunk, vary, gotPeeking, errPeeking, got, err)
	}
	if len(r.buf) > max(InitialSize, r.max) {
		t.Fatalf("a buffer of %d bytes, beyond %d", len(r.buf), max(InitialSize, r.max))
	}
	for _, cmd := range got {
		if n := strings.Count(cmd, "\x00") + 1; n > int(lim.MaxArgs) {
			t.Fatalf("a command of %d arguments passed a limit of %d", n, lim.MaxArgs)
		}
	}
}

// referenceRead reads commands from the whole of in the plain way, each as
// its arguments joined by NUL, with the refusal if there is one: a command
// cut off by the end of in is no command, and no refusal unless a byte of it
// is wrong already. A command named AUTH authenticates the ones after it.
func referenceRead(in []byte, lim Limits, authed bool) ([]string, error) {
	lim = lim.withDefaults()
	var cmds []string
	for s := string(in); s != ""; {
		var args []string
		var whole bool
		var err error
		if s[0] == '*' {
			args, s, whole, err = referenceMultibulk(s, lim, authed)
		} else {
			args, s, whole, err = referenceInline(s, lim)
		}
		if err != nil || !whole {
			return cmds, err
		}
		if len(args) > 0 {
			cmds = append(cmds, strings.Join(args, "\x00"))
			authed = authed || strings.EqualFold(args[0], "auth")
		}
	}
	return cmds, nil
}

// referenceNumber reads the number and CRLF at the start of s: the number
// and what follows it; or whole false if s ends first with every byte so
// far right; or ok false if a byte is wrong: anything but an optional '-',
// at most 19 digits without a leading zero, CRLF, or a number beyond int64.
func referenceNumber(s string) (n int64, rest string, whole, ok bool) {
	i := 0
	if strings.HasPrefix(s, "-") {
		i++
	}
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	num := s[:i]
	digits := strings.TrimPrefix(num, "-")
	switch {
	case len(digits) > 19, strings.HasPrefix(digits, "0") && num != "0":
		return 0, "", false, false
	case i == len(s):
		return 0, "", false, true
	case s[i] != '\r' || digits == "":
		return 0, "", false, false
	case i+1 == len(s):
		return 0, "", false, true
	case s[i+1] != '\n':
		return 0, "", false, false
	}
	n, err := strconv.ParseInt(num, 10, 64)
	return n, s[i+2:], true, err == nil
}

func referenceMultibulk(s string, lim Limits, authed bool) (args []string, rest string, whole bool, err error) {
	count, rest, whole, ok := referenceNumber(s[1:])
	switch {
	case !ok || whole && count > lim.MaxArgs:
		return nil, "", false, ErrMultibulkLength
	case !whole:
		return nil, "", false, nil
	case !authed && count > UnauthMaxArgs:
		return nil, "", false, ErrUnauthMultibulkLength
	}
	size := int64(len(s) - len(rest))
	for range max(count, 0) {
		if rest == "" {
			return nil, "", false, nil
		}
		if rest[0] != '$' {
			return nil, "", false, expectedBulk(rest[0])
		}
		n, body, whole, ok := referenceNumber(rest[1:])
		switch {
		case !ok || whole && (n < 0 || n > lim.MaxBulkLen):
			return nil, "", false, ErrBulkLength
		case !whole:
			return nil, "", false, nil
		case !authed && n > UnauthMaxBulkLen:
			return nil, "", false, ErrUnauthBulkLength
		}
		size += int64(len(rest)-len(body)) + n + 2
		switch {
		case size > lim.MaxQueryLen:
			return nil, "", false, ErrQueryBufferLimit
		case int64(len(body)) > n && body[n] != '\r', int64(len(body)) > n+1 && body[n+1] != '\n':
			return nil, "", false, ErrBulkLength
		case int64(len(body)) < n+2:
			return nil, "", false, nil
		}
		args = append(args, body[:n])
		rest = body[n+2:]
	}
	return args, rest, true, nil
}

// referenceInline splits the line with splitArgs, the reader's own
// sdssplitargs, which TestSplitInline checks against Redis's behaviour.
func referenceInline(s string, lim Limits) (args []string, rest string, whole bool, err error) {
	end := strings.IndexByte(s, '\n')
	switch {
	case end < 0 && int64(len(s)) > lim.MaxInlineLen, int64(end) > lim.MaxInlineLen:
		return nil, "", false, ErrInlineTooBig
	case end < 0:
		return nil, "", false, nil
	}
	split, ok := splitArgs([]byte(strings.TrimSuffix(s[:end], "\r")), nil)
	switch {
	case !ok:
		return nil, "", false, ErrUnbalancedQuotes
	case int64(len(split)) > lim.MaxArgs:
		return nil, "", false, ErrMultibulkLength
	}
	for _, a := range split {
		args = append(args, string(a))
	}
	return args, s[end+1:], true, nil
}

// readAllPeeking is readAll calling PeekKeys before each Next, as a server's
// batch loop does. A key PeekKeys returns must be the second argument of the
// command Next returns next (or of the one after), unless Next refuses first.
func readAllPeeking(t *testing.T, r *Reader, authed bool) ([]string, error) {
	var cmds []string
	var want []string // the keys the next commands must have; "" is none
	for {
		next, after := r.PeekKeys()
		if next != nil {
			want = []string{string(next), ""}
			if after != nil {
				want[1] = string(after)
			}
		}
		args, err := r.Next(authed)
		if err != nil {
			return cmds, err
		}
		if args == nil {
			if len(want) > 0 && want[0] != "" {
				t.Fatalf("PeekKeys saw %q next, and Next found no whole command", want[0])
			}
			want = nil
			if err := r.Fill(); err != nil {
				return cmds, err
			}
			continue
		}
		if len(want) > 0 {
			if want[0] != "" && (len(args) < 2 || string(args[1]) != want[0]) {
				t.Fatalf("PeekKeys saw %q next; Next returned %q", want[0], args)
			}
			want = want[1:]
		}
		cmds = append(cmds, string(bytes.Join(args, []byte{0})))
		if bytes.EqualFold(args[0], []byte("auth")) {
			authed = true
		}
	}
}
