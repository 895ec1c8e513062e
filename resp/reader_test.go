package resp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// splitReader reads its input in reads of the sizes given, in turn.
type splitReader struct {
	in    []byte
	sizes []int
	reads int
}

func (s *splitReader) Read(p []byte) (int, error) {
	if len(s.in) == 0 {
		return 0, io.EOF
	}
	size := max(s.sizes[s.reads%len(s.sizes)], 1)
	s.reads++
	n := copy(p[:min(len(p), size)], s.in)
	s.in = s.in[n:]
	return n, nil
}

// readAll reads every command of r, each as its arguments joined by NUL,
// until Fill fails or Next refuses; AUTH authenticates the commands after
// it. It returns the commands and the error that ended them.
func readAll(r *Reader, authed bool) ([]string, error) {
	var cmds []string
	for {
		args, err := r.Next(authed)
		if err != nil {
			return cmds, err
		}
		if args == nil {
			if err := r.Fill(); err != nil {
				return cmds, err
			}
			continue
		}
		cmds = append(cmds, string(bytes.Join(args, []byte{0})))
		if bytes.EqualFold(args[0], []byte("auth")) {
			authed = true
		}
	}
}

// refusal reads input whole and returns the commands and the refusal, or
// io.EOF.
func refusal(input string, lim Limits, authed bool) ([]string, error) {
	return readAll(NewReader(strings.NewReader(input), lim), authed)
}

// Every refusal, with Redis's text, as soon as the byte that makes the input
// wrong arrives; the commands before it are returned first.
func TestReaderRefuses(t *testing.T) {
	lim := Limits{MaxBulkLen: 100, MaxArgs: 8, MaxInlineLen: 64, MaxQueryLen: 300}
	for _, c := range []struct {
		name, in string
		want     error
	}{
		{"bulk near MaxInt64", "*1\r\n$9223372036854775807\r\n", ErrBulkLength},
		{"count near MaxInt64", "*9223372036854775807\r\n", ErrMultibulkLength},
		{"bulk over the limit", "*2\r\n$4\r\nPING\r\n$101\r\n", ErrBulkLength},
		{"too many args", "*9\r\n", ErrMultibulkLength},
		{"too many inline args", "a b c d e f g h i\r\n", ErrMultibulkLength},
		{"negative bulk", "*1\r\n$-5\r\n", ErrBulkLength},
		{"inline line too long", strings.Repeat("x", 65), ErrInlineTooBig},
		{"plus sign", "*+1\r\n", ErrMultibulkLength},
		{"leading zero", "*1\r\n$04\r\nPING\r\n", ErrBulkLength},
		{"minus zero", "*1\r\n$-0\r\n", ErrBulkLength},
		{"empty length", "*1\r\n$\r\n", ErrBulkLength},
		{"no CR", "*1\n", ErrMultibulkLength},
		{"CR without LF", "*1\r\r", ErrMultibulkLength},
		{"minus zero count", "*-0\r\n", ErrMultibulkLength},
		{"not a bulk", "*1\r\n:1\r\n", expectedBulk(':')},
		{"CR for a bulk", "*1\r\n\r\n", expectedBulk('\r')},
		{"argument too long", "*1\r\n$4\r\nPINGx\r\n", ErrBulkLength},
		{"argument without LF", "*1\r\n$4\r\nPING\rx", ErrBulkLength},
		{"argument without CR, at once", "*1\r\n$4\r\nPINGx", ErrBulkLength},
		{"unbalanced quotes", "ECHO \"a\r\n", ErrUnbalancedQuotes},
		{"over the query limit", "*4\r\n$100\r\n" + strings.Repeat("a", 100) + "\r\n$100\r\n" + strings.Repeat("a", 100) + "\r\n$100\r\n", ErrQueryBufferLimit},
		{"a wrong digit, before the CR", "*1\r\n$1x", ErrBulkLength},
		{"20 digits", "*1\r\n$00000000000000000000", ErrBulkLength},
	} {
		cmds, err := refusal(c.in, lim, true)
		require.Empty(t, cmds, c.name)
		require.Equal(t, c.want, err, c.name)
	}
	cmds, err := refusal("PING\r\n*1\r\n$4\r\nPING\r\n*1\r\n$999\r\n", lim, true)
	require.Equal(t, []string{"PING", "PING"}, cmds, "answered before the refusal")
	require.Same(t, ErrBulkLength, err)
	require.Equal(t, "ERR Protocol error: expected '$', got ' '", expectedBulk('\n').Reply)
	require.Equal(t, "ERR Protocol error: expected '$', got '\xff'", expectedBulk(0xff).Reply, "the byte, as Redis shows it")
}

// Once refused, always refused: the caller closes the connection.
func TestReaderRefusalSticks(t *testing.T) {
	r := NewReader(strings.NewReader("*1\r\n$x\r\nPING\r\n"), Limits{})
	require.NoError(t, r.Fill())
	for range 3 {
		args, err := r.Next(true)
		require.Nil(t, args)
		require.Same(t, ErrBulkLength, err)
	}
}

// Numbers are read as Redis's string2ll reads them.
func TestReaderNumbers(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		err  error
	}{
		{"*0\r\n*-1\r\n*-9223372036854775808\r\nPING\r\n", []string{"PING"}, io.EOF}, // counts Redis ignores
		{"*-9223372036854775809\r\n", nil, ErrMultibulkLength},
		{"*9223372036854775808\r\n", nil, ErrMultibulkLength},
		{"*--1\r\n", nil, ErrMultibulkLength},
		{"*-\r\n", nil, ErrMultibulkLength},
		{"*1 \r\n", nil, ErrMultibulkLength},
		{"*01\r\n", nil, ErrMultibulkLength},
		{"*1\r\n$0\r\n\r\n", []string{""}, io.EOF},
		{"*1\r\n$10\r\n0123456789\r\n*1\r\n$100\r\n" + strings.Repeat("h", 100) + "\r\n", []string{"0123456789", strings.Repeat("h", 100)}, io.EOF},
		{"*2\r\n$1\r\na\r\n$99\r\n" + strings.Repeat("n", 99) + "\r\n", []string{"a\x00" + strings.Repeat("n", 99)}, io.EOF},
	} {
		got, err := refusal(c.in, Limits{}, true)
		require.Equal(t, c.want, got, "%q", c.in)
		require.Equal(t, c.err, err, "%q", c.in)
	}
}

// shortNumber, number's quick path, reads what number reads, or leaves it to
// number: every string of five bytes from the ones that matter.
func TestShortNumberAgreesWithNumber(t *testing.T) {
	const alphabet = "0129-\r\nx"
	b := make([]byte, 5)
	quick := 0
	var fill func(i int)
	fill = func(i int) {
		if i == len(b) {
			if n, end := shortNumber(b, 0); end != 0 {
				quick++
				wn, wend, st := number(b, 0)
				require.Equal(t, numOK, st, "%q", b)
				require.Equal(t, [2]int64{wn, int64(wend)}, [2]int64{n, int64(end)}, "%q", b)
			}
			return
		}
		for _, c := range []byte(alphabet) {
			b[i] = c
			fill(i + 1)
		}
	}
	fill(0)
	require.Equal(t, 3*len(alphabet)*len(alphabet)+3*4*len(alphabet), quick, "1, 2, 9, then CRLF; or two digits, the first not 0")
}

// Each limit lets through a command at it and refuses one past it.
func TestReaderLimitsAtAndPastEachBound(t *testing.T) {
	lim := Limits{MaxBulkLen: 10, MaxArgs: 3, MaxInlineLen: 16, MaxQueryLen: 40}
	for _, c := range []struct {
		name    string
		at, out string // a command at the limit, and one past it
		err     error
	}{
		{"MaxBulkLen", "*1\r\n$10\r\n0123456789\r\n", "*1\r\n$11\r\n", ErrBulkLength},
		{"MaxArgs", "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", "*4\r\n", ErrMultibulkLength},
		{"MaxArgs inline", "a b c\r\n", "a b c d\r\n", ErrMultibulkLength},
		// The line is counted with its CR, without its LF.
		{"MaxInlineLen", "ECHO 0123456789\r\n", "ECHO 01234567890\r\n", ErrInlineTooBig},
		{"MaxInlineLen, no LF yet", "ECHO 01234567890", "ECHO 012345678901", ErrInlineTooBig},
		// 4 + (5+10+2) + (4+7+2) + (4+0+2) = 40; then (4+1+2): 41.
		{"MaxQueryLen", "*3\r\n$10\r\n0123456789\r\n$7\r\n0123456\r\n$0\r\n\r\n", "*3\r\n$10\r\n0123456789\r\n$7\r\n0123456\r\n$1\r\n", ErrQueryBufferLimit},
	} {
		cmds, err := refusal(c.at, lim, true)
		require.Len(t, cmds, min(1, strings.Count(c.at, "\n")), c.name)
		require.Equal(t, io.EOF, err, c.name)
		_, err = refusal(c.out, lim, true)
		require.Equal(t, c.err, err, c.name)
	}
	ten := "*10\r\n" + strings.Repeat("$1\r\nx\r\n", 10)
	big := "*2\r\n$4\r\nECHO\r\n$16384\r\n" + strings.Repeat("b", 16384) + "\r\n"
	for _, c := range []struct {
		in  string
		err error
	}{
		{ten, io.EOF},
		{"*11\r\n", ErrUnauthMultibulkLength},
		{big, io.EOF},
		{"*2\r\n$4\r\nECHO\r\n$16385\r\n", ErrUnauthBulkLength},
		{"ECHO " + strings.Repeat("i", 20000) + " a b c d e f g h i j k\r\n", io.EOF}, // inline: MaxInlineLen only
	} {
		_, err := refusal(c.in, Limits{}, false)
		require.Equal(t, c.err, err, "%.40q", c.in)
	}
}

// Whether the client has authenticated is asked per command: an AUTH lifts
// the smaller limits for the very next command of the same buffer, and they
// apply again to a command read while not authenticated.
func TestReaderUnauthenticatedLimitsSwitchMidBuffer(t *testing.T) {
	eleven := "*11\r\n" + strings.Repeat("$1\r\nx\r\n", 11)
	big := "*2\r\n$4\r\nECHO\r\n$16385\r\n" + strings.Repeat("b", 16385) + "\r\n"
	in := "*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n" + eleven + big
	r := NewReader(strings.NewReader(in+in), Limits{})
	require.NoError(t, r.Fill())
	args, err := r.Next(false)
	require.NoError(t, err)
	require.Equal(t, "AUTH", string(args[0]))
	cmds, err := readAll(r, true)
	require.Equal(t, io.EOF, err)
	require.Len(t, cmds, 5)

	cmds, err = refusal("PING\r\n"+eleven, Limits{}, false)
	require.Equal(t, []string{"PING"}, cmds)
	require.Same(t, ErrUnauthMultibulkLength, err)
	cmds, err = refusal("AUTH pw\r\n"+eleven+big+"PING\r\n", Limits{}, false)
	require.Len(t, cmds, 4)
	require.Equal(t, io.EOF, err)
}

// Whatever the sizes of the reads, the same commands and the same refusal.
func TestReaderIgnoresHowInputIsSplit(t *testing.T) {
	inputs := []string{
		"*2\r\n$4\r\nECHO\r\n$10\r\n0123456789\r\nPING\r\n*1\r\n$4\r\nPING\r\n",
		"PING\r\nECHO \"a b\\x41\\n\" 'c\\'d'\r\n\r\n\n*1\r\n$4\r\nPING\r\n",
		"*1\r\n$4\r\nPING\r\n*1\r\n$11\r\n",
		"*3\r\n$3\r\nDEL\r\n$1\r\na\r\n$1\r\nb\r\nEC\"HO\r\n",
		"PING\r\n" + strings.Repeat("y", 70000),
		"*1\r\n$40000\r\n" + strings.Repeat("z", 40000) + "\r\nPING\r\n",
		"*2\r\n$4\r\nPING\r\n$-3\r\nPING\r\n",
	}
	for i, in := range inputs {
		want, wantErr := readAll(NewReader(&splitReader{in: []byte(in), sizes: []int{1 << 20}}, Limits{}), true)
		for _, sizes := range [][]int{{1}, {3, 7}, {4096}, {17, 5000}, {4095, 1}} {
			got, err := readAll(NewReader(&splitReader{in: []byte(in), sizes: sizes}, Limits{}), true)
			require.Equal(t, want, got, "input %d, reads of %d", i, sizes)
			require.Equal(t, wantErr, err, "input %d, reads of %d", i, sizes)
		}
	}
}

// An incomplete command is not read again from its start as it arrives:
// Next resumes at the header of the argument it stopped at, so that what
// it has yet to look at is at most a header, or an argument's bytes.
func TestReaderResumes(t *testing.T) {
	var in strings.Builder
	in.WriteString("*2000\r\n")
	for i := range 2000 {
		fmt.Fprintf(&in, "$%d\r\n%s\r\n", i%300, strings.Repeat("r", i%300))
	}
	src := &splitReader{in: []byte(in.String()), sizes: []int{1, 7, 150, 2}}
	r := NewReader(src, Limits{})
	lastP := 0
	for {
		args, err := r.Next(true)
		require.NoError(t, err)
		if args != nil {
			require.Len(t, args, 2000)
			break
		}
		require.GreaterOrEqual(t, r.p-r.r, lastP, "Next went back")
		lastP = r.p - r.r
		if header := r.w - r.p; header >= headerRoom {
			require.Equal(t, byte('$'), r.buf[r.p])
			n, end, st := number(r.buf[:r.w], r.p+1)
			require.Equal(t, numOK, st)
			require.Less(t, r.w-end, int(n)+2, "stopped before a whole argument")
		}
		require.NoError(t, r.Fill())
	}
	require.Greater(t, src.reads, 5000, "the command came in many reads")

	// An inline line is searched for its LF once, however it trickles in.
	r = NewReader(&splitReader{in: []byte(strings.Repeat("i", 1000) + "\r\n"), sizes: []int{3}}, Limits{})
	for {
		args, err := r.Next(true)
		require.NoError(t, err)
		if args != nil {
			require.Equal(t, strings.Repeat("i", 1000), string(args[0]))
			break
		}
		require.Equal(t, r.w, r.p, "searched up to what has arrived")
		require.NoError(t, r.Fill())
	}
}

// The buffer grows only as far as one command needs, at once to what an
// argument's header announces, and back to InitialSize once that command
// has been used; a stream of small commands that never pauses on a command
// boundary never grows it.
func TestReaderBuffer(t *testing.T) {
	long := "*2\r\n$4\r\nECHO\r\n$100000\r\n" + strings.Repeat("l", 100000) + "\r\n"
	r := NewReader(&splitReader{in: []byte(long + "PING\r\nPI"), sizes: []int{5000}}, Limits{})
	sizes := map[int]bool{}
	for {
		args, err := r.Next(true)
		require.NoError(t, err)
		if args != nil {
			require.Equal(t, 100000, len(args[1]))
			break
		}
		require.NoError(t, r.Fill())
		sizes[len(r.buf)] = true
	}
	require.Equal(t, map[int]bool{InitialSize: true, len(long): true}, sizes, "grown once, to the announced size")
	cmds, err := readAll(r, true)
	require.Equal(t, []string{"PING"}, cmds)
	require.Equal(t, io.EOF, err)
	require.Equal(t, InitialSize, len(r.buf), "shrunk once only a small part of a command was left")

	r = NewReader(strings.NewReader(long), Limits{})
	_, _ = readAll(r, true)
	r.src = strings.NewReader("PING\r\n")
	r.err = nil
	cmds, err = readAll(r, true)
	require.Equal(t, []string{"PING"}, cmds)
	require.Equal(t, io.EOF, err)
	require.Equal(t, InitialSize, len(r.buf), "shrunk once drained")

	cmd := "*3\r\n$3\r\nDEL\r\n$5\r\nkey:1\r\n$5\r\nkey:2\r\n"
	src := &splitReader{in: []byte(strings.Repeat(cmd, 20000)), sizes: []int{4000, 37, 1001}}
	r = NewReader(src, Limits{})
	cmds, err = readAll(r, true)
	require.Len(t, cmds, 20000)
	require.Equal(t, io.EOF, err)
	require.Equal(t, InitialSize, len(r.buf), "never grown")

	// However much a command announces, the buffer stays within the query
	// limit; past it, the command is refused before its bytes are buffered.
	lim := Limits{MaxQueryLen: 50000, MaxBulkLen: 100000}
	r = NewReader(&splitReader{in: []byte(long), sizes: []int{1000}}, lim)
	_, err = readAll(r, true)
	require.Same(t, ErrQueryBufferLimit, err)
	require.Equal(t, InitialSize, len(r.buf))
	r = NewReader(&splitReader{in: []byte(long[:49000]), sizes: []int{1000}}, Limits{MaxQueryLen: 100030, MaxBulkLen: 100000})
	_, err = readAll(r, true)
	require.Equal(t, io.EOF, err)
	require.LessOrEqual(t, len(r.buf), r.max)
}

// The reused argument slice does not keep the room one command of many
// arguments needed.
func TestReaderDoesNotKeepAHugeArgumentSlice(t *testing.T) {
	var in strings.Builder
	fmt.Fprintf(&in, "*1001\r\n$3\r\nDEL\r\n")
	for i := range 1000 {
		fmt.Fprintf(&in, "$%d\r\nk%d\r\n", len(fmt.Sprint(i))+1, i)
	}
	in.WriteString("PING\r\n*1\r\n$4\r\nPING\r\n")
	r := NewReader(strings.NewReader(in.String()), Limits{})
	cmds, err := readAll(r, true)
	require.Len(t, cmds, 3)
	require.Equal(t, io.EOF, err)
	require.Less(t, cap(r.args), 1000, "room for the DEL's arguments is not kept")
}

// The arguments are slices of the reader's buffer: nothing is copied.
func TestReaderArgumentsAreSlicesOfItsBuffer(t *testing.T) {
	r := NewReader(strings.NewReader("*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\nECHO \"a\\x41\"\r\n"), Limits{})
	require.NoError(t, r.Fill())
	for range 2 {
		args, err := r.Next(true)
		require.NoError(t, err)
		require.Len(t, args, 2)
		for _, a := range args {
			require.True(t, inside(a, r.buf), "%q", a)
		}
	}
	args, err := r.Next(true)
	require.Nil(t, args)
	require.NoError(t, err)
}

// A read error is returned once the bytes read with it have been used,
// then again by every Fill.
func TestReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(iotestDataErr{"PING\r\nPI", boom}, Limits{})
	require.NoError(t, r.Fill())
	args, err := r.Next(true)
	require.NoError(t, err)
	require.Equal(t, "PING", string(args[0]))
	args, err = r.Next(true)
	require.NoError(t, err)
	require.Nil(t, args)
	n, fresh := r.Pending()
	require.Equal(t, 2, n)
	require.True(t, fresh, "the incomplete command came with the last Fill")
	require.Same(t, boom, r.Fill())
	require.Same(t, boom, r.Fill())
}

// iotestDataErr returns its data and its error from one Read.
type iotestDataErr struct {
	data string
	err  error
}

func (d iotestDataErr) Read(p []byte) (int, error) { return copy(p, d.data), d.err }

// Pending tells whether an incomplete command began with the last Fill or
// before it.
func TestReaderPending(t *testing.T) {
	r := NewReader(&splitReader{in: []byte("PING\r\n*1\r\n$4\r\nPI"), sizes: []int{8, 4, 100}}, Limits{})
	require.NoError(t, r.Fill()) // "PING\r\n*1"
	args, _ := r.Next(true)
	require.Equal(t, "PING", string(args[0]))
	args, _ = r.Next(true)
	require.Nil(t, args)
	n, fresh := r.Pending()
	require.Equal(t, 2, n)
	require.True(t, fresh)
	require.NoError(t, r.Fill()) // "\r\n$4"
	args, _ = r.Next(true)
	require.Nil(t, args)
	n, fresh = r.Pending()
	require.Equal(t, 6, n)
	require.False(t, fresh, "the command began before the last Fill")
}

// Used gives back, however the input is split, every byte of the multibulk
// commands Next returned since the last Fill, the empty ones it skipped
// among them and a command begun before that Fill whole: concatenated, the
// input up to what is still pending.
func TestReaderUsedIsTheInputAsItCame(t *testing.T) {
	in := "*1\r\n$4\r\nPING\r\n\r\n*0\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\n12\r\n*1\r\n$4\r\nPI"
	for _, sizes := range [][]int{{1}, {3, 7}, {5, 100}, {1000}} {
		r := NewReader(&splitReader{in: []byte(in), sizes: sizes}, Limits{})
		var got []byte
		var cmds int
		for r.Fill() == nil {
			require.Empty(t, r.Used(), "nothing used right after a Fill")
			for {
				args, err := r.Next(true)
				require.NoError(t, err)
				if args == nil {
					break
				}
				cmds++
			}
			got = append(got, r.Used()...)
		}
		pending, _ := r.Pending()
		require.Equal(t, 3, cmds, "sizes %v", sizes)
		require.Equal(t, in[:len(in)-len("*1\r\n$4\r\nPI")], string(got), "sizes %v", sizes)
		require.Equal(t, len("*1\r\n$4\r\nPI"), pending)
	}
}

// loopReader returns the same batch from every read: a client pipelining
// forever.
type loopReader struct{ batch []byte }

func (l *loopReader) Read(p []byte) (int, error) { return copy(p, l.batch), nil }

func throttleBatch() []byte {
	var b strings.Builder
	for i := range 16 {
		key := fmt.Sprintf("key:%d", i)
		fmt.Fprintf(&b, "*5\r\n$11\r\nCL.THROTTLE\r\n$%d\r\n%s\r\n$3\r\n100\r\n$2\r\n10\r\n$1\r\n1\r\n", len(key), key)
	}
	return []byte(b.String())
}

// readBatch reads a batch of loopReader's, failing t if it is not 16
// commands of five arguments.
func readBatch(tb testing.TB, r *Reader) {
	if err := r.Fill(); err != nil {
		tb.Fatal(err)
	}
	n := 0
	for {
		args, err := r.Next(true)
		if err != nil {
			tb.Fatal(err)
		}
		if args == nil {
			break
		}
		if len(args) != 5 {
			tb.Fatalf("%q", args)
		}
		n++
	}
	if n != 16 {
		tb.Fatalf("%d commands", n)
	}
}

// Reading commands allocates nothing: the arguments are slices of the
// buffer, and the slice holding them is reused.
func TestReaderAllocatesNothing(t *testing.T) {
	r := NewReader(&loopReader{throttleBatch()}, Limits{})
	readBatch(t, r)
	require.Zero(t, testing.AllocsPerRun(100, func() { readBatch(t, r) }))
}

// BenchmarkReader reads pipelined batches of 16 CL.THROTTLE; an op is one
// command.
func BenchmarkReader(b *testing.B) {
	batch := throttleBatch()
	r := NewReader(&loopReader{batch}, Limits{})
	b.ReportAllocs()
	b.SetBytes(int64(len(batch) / 16))
	for b.Loop() {
		readBatch(b, r)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*16), "ns/command")
}

// Fill is called only once Next has returned every whole command: called
// with the buffer full of them, and no room to grow within the limits, it
// fails rather than grow.
func TestReaderFillWithCommandsUnread(t *testing.T) {
	r := NewReader(&loopReader{[]byte("PING\r\n")}, Limits{MaxQueryLen: 100, MaxInlineLen: 10})
	for r.w < len(r.buf) {
		require.NoError(t, r.Fill())
	}
	require.Same(t, errFull, r.Fill())
	require.Equal(t, InitialSize, len(r.buf))
	args, err := r.Next(true)
	require.NoError(t, err)
	require.Equal(t, "PING", string(args[0]))
}
