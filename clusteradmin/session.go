package clusteradmin

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// session holds a connection to each node (or Sentinel) a command talks
// to, each authenticated with password and each command bounded by
// timeout.
type session struct {
	user     string // the ACL user password is for; "" for the default user
	password string
	timeout  time.Duration
	conns    map[string]*conn // by address
}

func newSession(user, password string, timeout time.Duration) *session {
	return &session{user: user, password: password, timeout: timeout, conns: map[string]*conn{}}
}

// conn returns the connection to addr (name names it in errors), dialing
// it on first use.
func (s *session) conn(addr, name string) (*conn, error) {
	if c := s.conns[addr]; c != nil {
		return c, nil
	}
	c, err := dial(addr, s.user, s.password, s.timeout)
	if err != nil {
		return nil, &NodeError{Node: name, Command: "connecting", Err: err}
	}
	s.conns[addr] = c
	return c, nil
}

// call sends args to the node at addr (name names it in errors).
func (s *session) call(addr, name string, args ...string) (any, error) {
	c, err := s.conn(addr, name)
	if err != nil {
		return nil, err
	}
	v, err := c.do(args...)
	if err != nil {
		var re ReplyError
		if !errors.As(err, &re) {
			// The connection's state is unknown: the next command dials
			// again.
			c.close()
			for a, other := range s.conns {
				if other == c {
					delete(s.conns, a)
				}
			}
		}
		return nil, &NodeError{Node: name, Command: strings.Join(args, " "), Err: err}
	}
	return v, nil
}

func (s *session) callInt(addr, name string, args ...string) (int64, error) {
	v, err := s.call(addr, name, args...)
	if err != nil {
		return 0, err
	}
	n, ok := v.(int64)
	if !ok {
		return 0, &NodeError{Node: name, Command: strings.Join(args, " "), Err: fmt.Errorf("answered %v, not an integer", v)}
	}
	return n, nil
}

func (s *session) callString(addr, name string, args ...string) (string, error) {
	v, err := s.call(addr, name, args...)
	if err != nil {
		return "", err
	}
	str, ok := v.(string)
	if !ok {
		return "", &NodeError{Node: name, Command: strings.Join(args, " "), Err: fmt.Errorf("answered %v, not a string", v)}
	}
	return str, nil
}

func (s *session) close() {
	for _, c := range s.conns {
		c.close() // a connection listed twice is closed twice, harmlessly
	}
}
