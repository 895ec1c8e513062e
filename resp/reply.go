package resp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// The client's side, for redcell's own tools (clusteradmin, bench/repllag)
// and a node's connection to another (clusternode): a command written and
// a RESP2 reply read back.

// AppendCommand appends args as a multibulk command.
func AppendCommand(b []byte, args ...string) []byte {
	b = fmt.Appendf(b, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b
}

// ReplyError is an error reply, its text without the leading '-'.
type ReplyError string

func (e ReplyError) Error() string { return string(e) }

// ErrMalformedReply is a reply that is not RESP2.
var ErrMalformedReply = errors.New("resp: malformed reply")

// ReadReply reads one RESP2 reply: a string (simple or bulk), an int64, nil
// (a null bulk string or array), or a []any of those. An error reply is
// returned as a ReplyError error, and inside an array as an element.
func ReadReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: a line %q", ErrMalformedReply, line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, ReplyError(body)
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: an integer %q", ErrMalformedReply, body)
		}
		return n, nil
	case '$', '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 {
			return nil, fmt.Errorf("%w: a length %q", ErrMalformedReply, line)
		}
		if n == -1 {
			return nil, nil
		}
		if line[0] == '*' {
			out := make([]any, n)
			for i := range out {
				v, err := ReadReply(r)
				var re ReplyError
				if errors.As(err, &re) {
					v, err = re, nil
				}
				if err != nil {
					return nil, err
				}
				out[i] = v
			}
			return out, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		if string(buf[n:]) != "\r\n" {
			return nil, fmt.Errorf("%w: a bulk string of %d bytes not ended by CRLF", ErrMalformedReply, n)
		}
		return string(buf[:n]), nil
	}
	return nil, fmt.Errorf("%w: a line %q", ErrMalformedReply, line)
}
