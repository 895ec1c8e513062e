package main

import (
	"bufio"
	"github.com/redcell/redcell/resp"
	"net"
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

// send buffers a command; receive flushes and reads one reply
// (resp.ReadReply), an error reply as a resp.ReplyError.
func (c *client) send(args ...string) { _, _ = c.w.Write(resp.AppendCommand(nil, args...)) }

func (c *client) receive() (any, error) {
	if err := c.w.Flush(); err != nil {
		return nil, err
	}
	_ = c.conn.SetReadDeadline(time.Now().Add(time.Minute))
	return resp.ReadReply(c.r)
}

func (c *client) do(args ...string) (any, error) {
	c.send(args...)
	return c.receive()
}

// throttleReply is CL.THROTTLE's five integers, or false.
func throttleReply(v any) ([]any, bool) {
	a, ok := v.([]any)
	return a, ok && len(a) == 5
}

// text is a string reply's text (INFO's), or "".
func text(v any) string {
	s, _ := v.(string)
	return s
}
