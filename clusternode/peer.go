package clusternode

import (
	"bufio"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/resp"
)

// peer is a connection to another node, for a migration: commands are
// queued (send), then flushed and their replies read in one round trip
// (replies).
type peer struct {
	conn    net.Conn
	r       *bufio.Reader
	w       *bufio.Writer
	cmd     []byte // send's encoding, reused
	pending int    // commands sent whose replies are yet to be read
	// deadline bounds the replies read from now on; zero: each read of
	// replies has peerTimeout.
	deadline time.Time
}

// Timeouts of a peer's connection.
const (
	peerDialTimeout = 5 * time.Second
	peerTimeout     = 10 * time.Second
)

// dialPeer connects to n and authenticates as user with password, if the
// password is not empty (without a user, as the default user).
func dialPeer(n cluster.Node, user, password string) (*peer, error) {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(n.IP, strconv.Itoa(n.Port)), peerDialTimeout)
	if err != nil {
		return nil, err
	}
	p := newPeer(conn)
	if password != "" {
		args := []string{"AUTH", password}
		if user != "" {
			args = []string{"AUTH", user, password}
		}
		if err := p.call(args...); err != nil {
			p.close()
			return nil, err
		}
	}
	return p, nil
}

// newPeer is a peer over conn.
func newPeer(conn net.Conn) *peer {
	return &peer{conn: conn, r: bufio.NewReader(conn), w: bufio.NewWriter(conn)}
}

func (p *peer) close() { _ = p.conn.Close() }

// send queues a command. A write that fails is reported by the next
// replies.
func (p *peer) send(args ...string) {
	p.cmd = resp.AppendCommand(p.cmd[:0], args...)
	_, _ = p.w.Write(p.cmd)
	p.pending++
}

// replies flushes the queued commands and reads n replies; the first error
// reply (a resp.ReplyError) is returned once all n are read, any other
// error at once.
func (p *peer) replies(n int) error {
	d := p.deadline
	if d.IsZero() {
		d = time.Now().Add(peerTimeout)
	}
	_ = p.conn.SetDeadline(d)
	if err := p.w.Flush(); err != nil {
		return err
	}
	var first error
	for ; n > 0; n-- {
		_, err := resp.ReadReply(p.r)
		var re resp.ReplyError
		if err != nil && !errors.As(err, &re) {
			return err
		}
		p.pending--
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// call sends one command and reads its reply.
func (p *peer) call(args ...string) error {
	p.send(args...)
	return p.replies(1)
}

// value sends one command and returns its reply (an error reply as a
// resp.ReplyError error), by the deadline, or within peerTimeout.
func (p *peer) value(args ...string) (any, error) {
	p.send(args...)
	d := p.deadline
	if d.IsZero() {
		d = time.Now().Add(peerTimeout)
	}
	_ = p.conn.SetDeadline(d)
	if err := p.w.Flush(); err != nil {
		return nil, err
	}
	p.pending--
	return resp.ReadReply(p.r)
}
