package clusteradmin

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// conn is a RESP2 connection to one node, for the operator's commands: one
// command at a time, each within the connection's timeout.
type conn struct {
	addr    string
	nc      net.Conn
	r       *bufio.Reader
	timeout time.Duration
}

// ReplyError is a node's error reply, its text without the leading '-'.
type ReplyError string

func (e ReplyError) Error() string { return string(e) }

// dial connects to addr and authenticates with password, if not empty.
func dial(addr, password string, timeout time.Duration) (*conn, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	c := &conn{addr: addr, nc: nc, r: bufio.NewReader(nc), timeout: timeout}
	if password != "" {
		if _, err := c.do("AUTH", password); err != nil {
			c.close()
			return nil, fmt.Errorf("AUTH: %w", err)
		}
	}
	return c, nil
}

func (c *conn) close() { _ = c.nc.Close() }

// do sends one command and returns its reply: a string (simple or bulk),
// an int64, nil, or a []any of those; an error reply is a ReplyError.
func (c *conn) do(args ...string) (any, error) {
	if err := c.nc.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c.nc, b.String()); err != nil {
		return nil, err
	}
	return readReply(c.r)
}

var errProtocol = errors.New("clusteradmin: malformed reply")

func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, errProtocol
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, ReplyError(body)
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		if err != nil {
			return nil, errProtocol
		}
		return n, nil
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 {
			return nil, errProtocol
		}
		if n == -1 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 {
			return nil, errProtocol
		}
		if n == -1 {
			return nil, nil
		}
		out := make([]any, n)
		for i := range out {
			// An error inside an array is an element, not the reply's.
			v, err := readReply(r)
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
	return nil, errProtocol
}
