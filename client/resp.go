package client

import (
	"bufio"
	"errors"
	"io"
	"strconv"
)

// The tracking connection's RESP3, by hand: it needs to tell a push from a
// reply as they arrive, which go-redis does not let a caller see, and it
// reads a handful of shapes only (HELLO's map, OK, TIME's array, GET's bulk
// string or null, invalidate pushes).

// value is one RESP3 reply, parsed: kind is its type byte; str a simple or
// bulk string's text, or an error's; num an integer; elems an aggregate's
// elements (a map's keys and values alternating); null a null of any kind.
type value struct {
	kind  byte
	str   string
	num   int64
	elems []value
	null  bool
}

// errProtocol is a reply that is not RESP3 as this package reads it.
var errProtocol = errors.New("client: malformed reply from the server")

// maxElems and maxBulk bound what one reply may announce, so that a broken
// stream cannot make the reader allocate without limit.
const (
	maxElems = 1 << 20
	maxBulk  = 512 << 20
)

// readValue reads one reply from r.
func readValue(r *bufio.Reader) (value, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		if err == bufio.ErrBufferFull {
			return value{}, errProtocol
		}
		return value{}, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return value{}, errProtocol
	}
	v := value{kind: line[0]}
	text := line[1 : len(line)-2]
	switch v.kind {
	case '+', '-':
		v.str = string(text)
	case '_':
		v.null = true
	case ':', '(':
		if v.num, err = strconv.ParseInt(string(text), 10, 64); err != nil {
			return v, errProtocol
		}
	case ',', '#':
		v.str = string(text)
	case '$', '=', '!':
		n, err := strconv.ParseInt(string(text), 10, 64)
		if err != nil || n < -1 || n > maxBulk {
			return v, errProtocol
		}
		if n == -1 {
			v.null = true
			return v, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return v, err
		}
		if b[n] != '\r' || b[n+1] != '\n' {
			return v, errProtocol
		}
		v.str = string(b[:n])
		if v.kind == '!' {
			v.kind = '-'
		}
	case '*', '~', '>', '%', '|':
		n, err := strconv.ParseInt(string(text), 10, 64)
		if err != nil || n < -1 || n > maxElems {
			return v, errProtocol
		}
		if n == -1 {
			v.null = true
			return v, nil
		}
		if v.kind == '%' || v.kind == '|' {
			n *= 2
		}
		v.elems = make([]value, n)
		for i := range v.elems {
			if v.elems[i], err = readValue(r); err != nil {
				return v, err
			}
		}
		if v.kind == '|' { // an attribute: the reply it describes follows
			return readValue(r)
		}
	default:
		return v, errProtocol
	}
	return v, nil
}

// err returns a reply that is an error as an error.
func (v value) err() error {
	if v.kind == '-' {
		return serverError(v.str)
	}
	return nil
}

// serverError is an error reply.
type serverError string

func (e serverError) Error() string { return string(e) }

// appendCommand appends args as a RESP command.
func appendCommand(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}
