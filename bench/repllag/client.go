package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// A minimal RESP client: what repllag needs of a connection, with no
// dependency, so that its timings are its own.

// client is one connection speaking RESP2, for one goroutine.
type client struct {
	addr string
	conn net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
}

func dial(addr string) (*client, error) {
	network := "tcp"
	if strings.HasPrefix(addr, "/") {
		network = "unix"
	}
	c, err := net.DialTimeout(network, addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &client{addr: addr, conn: c, r: bufio.NewReaderSize(c, 64<<10), w: bufio.NewWriterSize(c, 64<<10)}, nil
}

func (c *client) close() { _ = c.conn.Close() }

// send buffers a command; receive flushes and reads one reply.
func (c *client) send(args ...string) {
	fmt.Fprintf(c.w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(c.w, "$%d\r\n%s\r\n", len(a), a)
	}
}

func (c *client) receive() (reply, error) {
	if err := c.w.Flush(); err != nil {
		return reply{}, err
	}
	_ = c.conn.SetReadDeadline(time.Now().Add(time.Minute))
	return readReply(c.r)
}

func (c *client) do(args ...string) (reply, error) {
	c.send(args...)
	return c.receive()
}

// reply is a RESP2 reply: kind is its first byte (+ - : $ *); str holds a
// simple string, an error or a bulk string, int an integer, arr an array's
// elements; null is a nil bulk string or array.
type reply struct {
	kind byte
	str  string
	int  int64
	arr  []reply
	null bool
}

func (r reply) String() string {
	switch {
	case r.null:
		return "(nil)"
	case r.kind == ':':
		return strconv.FormatInt(r.int, 10)
	case r.kind == '*':
		s := make([]string, len(r.arr))
		for i, e := range r.arr {
			s[i] = e.String()
		}
		return "[" + strings.Join(s, " ") + "]"
	}
	return strconv.Quote(string(r.kind) + r.str)
}

func readReply(br *bufio.Reader) (reply, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return reply{}, err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return reply{}, fmt.Errorf("a reply line %q", line)
	}
	r := reply{kind: line[0], str: line[1 : len(line)-2]}
	switch r.kind {
	case '+', '-':
		return r, nil
	case ':':
		r.int, err = strconv.ParseInt(r.str, 10, 64)
		return r, err
	case '$', '*':
		n, err := strconv.Atoi(r.str)
		if err != nil || n < -1 {
			return reply{}, fmt.Errorf("a reply line %q", line)
		}
		r.str = ""
		if n == -1 {
			r.null = true
			return r, nil
		}
		if r.kind == '*' {
			r.arr = make([]reply, n)
			for i := range r.arr {
				if r.arr[i], err = readReply(br); err != nil {
					return reply{}, err
				}
			}
			return r, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(br, b); err != nil {
			return reply{}, err
		}
		if string(b[n:]) != "\r\n" {
			return reply{}, fmt.Errorf("a bulk string of %d bytes not ended by CRLF", n)
		}
		r.str = string(b[:n])
		return r, nil
	}
	return reply{}, fmt.Errorf("a reply line %q", line)
}
