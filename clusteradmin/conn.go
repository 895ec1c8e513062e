package clusteradmin

import (
	"bufio"
	"fmt"
	"net"
	"time"

	"github.com/redcell/redcell/resp"
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
type ReplyError = resp.ReplyError

// dial connects to addr and authenticates with password, if not empty, as
// user (the default user when "").
func dial(addr, user, password string, timeout time.Duration) (*conn, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	c := &conn{addr: addr, nc: nc, r: bufio.NewReader(nc), timeout: timeout}
	if password != "" {
		auth := []string{"AUTH", password}
		if user != "" {
			auth = []string{"AUTH", user, password}
		}
		if _, err := c.do(auth...); err != nil {
			c.close()
			return nil, fmt.Errorf("AUTH: %w", err)
		}
	}
	return c, nil
}

func (c *conn) close() { _ = c.nc.Close() }

// do sends one command and returns its reply (resp.ReadReply): a string,
// an int64, nil, or a []any of those; an error reply is a ReplyError.
func (c *conn) do(args ...string) (any, error) {
	if err := c.nc.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		return nil, err
	}
	if _, err := c.nc.Write(resp.AppendCommand(nil, args...)); err != nil {
		return nil, err
	}
	return resp.ReadReply(c.r)
}
