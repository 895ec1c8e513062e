package testkit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// ErrMalformed is a reply that is not RESP2 or RESP3 as a server writes it.
var ErrMalformed = errors.New("testkit: malformed reply")

// ReadReply reads one whole reply from r, RESP2 or RESP3, and returns its
// bytes as they came. It checks what a client relies on: every line ends in
// CRLF and holds no other CR, an integer is an int64, a length is -1 or
// more, a bulk string is followed by CRLF, an aggregate has the elements it
// announces. On an error it returns what it read of the reply, and
// ErrMalformed, or io.EOF before the reply's first byte,
// io.ErrUnexpectedEOF after it, or the read's error.
func ReadReply(r *bufio.Reader) (string, error) {
	var raw strings.Builder
	_, err := read(r, &raw)
	return raw.String(), err
}

// Reply is a reply parsed.
type Reply struct {
	// Kind is the reply's type byte: '+', '-', ':', '$', '*', and RESP3's
	// '_', ',', '#', '(', '=', '!', '~', '%', '|', '>'.
	Kind byte
	// Text is a string's or a number's text, a bulk string's bytes, a
	// verbatim string's without its format ("txt:"); "" for a null.
	Text string
	// Elems are an aggregate's elements: an array's, a set's, a push's; a
	// map's or an attribute's keys and values, alternating. Nil for a null
	// array.
	Elems []Reply
}

// Parse parses s, which must be one whole reply and nothing more.
func Parse(s string) (Reply, error) {
	r := bufio.NewReader(strings.NewReader(s))
	var raw strings.Builder
	v, err := read(r, &raw)
	if err != nil {
		return v, err
	}
	if rest, _ := io.ReadAll(r); len(rest) > 0 {
		return v, fmt.Errorf("%w: %q after the reply", ErrMalformed, rest)
	}
	return v, nil
}

// String is the reply in full, its types and values, for messages and
// exact comparisons: "*[:1 $x]".
func (r Reply) String() string {
	if r.Elems == nil && !slices.Contains([]byte("*~%|>"), r.Kind) {
		return string(r.Kind) + r.Text
	}
	parts := make([]string, len(r.Elems))
	for i, e := range r.Elems {
		parts[i] = e.String()
	}
	return string(r.Kind) + "[" + strings.Join(parts, " ") + "]"
}

// read reads one reply from r, copying its bytes to raw.
func read(r *bufio.Reader, raw *strings.Builder) (Reply, error) {
	start := raw.Len()
	line, err := r.ReadString('\n')
	raw.WriteString(line)
	if err != nil {
		if errors.Is(err, io.EOF) && raw.Len() > 0 {
			err = io.ErrUnexpectedEOF
		}
		return Reply{}, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' || strings.IndexByte(line[:len(line)-2], '\r') >= 0 {
		return Reply{}, fmt.Errorf("%w: a line %q", ErrMalformed, line)
	}
	v := Reply{Kind: line[0], Text: line[1 : len(line)-2]}
	length := func() (int, error) {
		n, err := strconv.Atoi(v.Text)
		if err != nil || n < -1 {
			return 0, fmt.Errorf("%w: a length %q", ErrMalformed, line)
		}
		v.Text = ""
		return n, nil
	}
	switch v.Kind {
	case '+', '-', '_', ',', '#', '(':
		return v, nil
	case ':':
		if _, err := strconv.ParseInt(v.Text, 10, 64); err != nil {
			return v, fmt.Errorf("%w: an integer %q", ErrMalformed, line)
		}
		return v, nil
	case '$', '=', '!':
		n, err := length()
		if err != nil || n < 0 {
			return v, err
		}
		buf := make([]byte, n+2)
		k, err := io.ReadFull(r, buf)
		raw.Write(buf[:k])
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return v, err
		}
		if string(buf[n:]) != "\r\n" {
			return v, fmt.Errorf("%w: a bulk string of %d bytes not ended by CRLF: %q", ErrMalformed, n, raw.String()[start:])
		}
		v.Text = string(buf[:n])
		if v.Kind == '=' && len(v.Text) >= 4 {
			v.Text = v.Text[4:] // the format, "txt:"
		}
		return v, nil
	case '*', '~', '>', '%', '|':
		n, err := length()
		if err != nil || n < 0 {
			return v, err
		}
		if v.Kind == '%' || v.Kind == '|' {
			n *= 2
		}
		v.Elems = make([]Reply, 0, n)
		for i := 0; i < n; i++ {
			e, err := read(r, raw)
			if err != nil {
				return v, fmt.Errorf("element %d: %w", i, err)
			}
			v.Elems = append(v.Elems, e)
		}
		return v, nil
	}
	return v, fmt.Errorf("%w: a line of unknown type %q", ErrMalformed, line)
}

// BulkList reads a RESP2 array of bulk strings (KEYS, CLUSTER
// GETKEYSINSLOT), failing the test if reply is anything else.
func BulkList(t testing.TB, reply string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(reply, "\r\n"), "\r\n")
	require.True(t, strings.HasPrefix(lines[0], "*"), "not an array: %q", reply)
	n, err := strconv.Atoi(lines[0][1:])
	require.NoError(t, err)
	require.Len(t, lines, 1+2*n, "not an array of bulk strings: %q", reply)
	out := make([]string, n)
	for i := range out {
		out[i] = lines[2+2*i]
	}
	return out
}
