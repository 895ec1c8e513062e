package server

import (
	"errors"
	"net"
	"net/netip"
	"time"

	"github.com/redcell/redcell/resp"
)

// refusalTimeout bounds writing the reply that explains a refusal.
const refusalTimeout = 5 * time.Second

// errRejected ends a connection refused at accept: beyond
// Limits.MaxClients, or by protected mode.
var errRejected = errors.New("connection refused at accept")

// refuseInput ends the connection over input its reader refused: malformed
// or too large RESP is answered with Redis's error text; a command over the
// query buffer limit closes the connection without a reply, and a warning
// is logged, as Redis does.
func (c *conn) refuseInput(err error) error {
	var pe *resp.ProtocolError
	if errors.As(err, &pe) {
		return c.refuse(pe.Reply, err)
	}
	if errors.Is(err, resp.ErrQueryBufferLimit) {
		c.srv.cfg.Logger.Warn("closing client that reached max query buffer length",
			"addr", c.addr, "limit", c.srv.limits.MaxQueryLen)
	}
	return err
}

// refuse sends reply as an error, after the TLS handshake if it has yet to
// run, and returns err, which makes serveConn close the connection.
func (c *conn) refuse(reply string, err error) error {
	if !c.handshook && c.handshake() != nil {
		return err
	}
	line := []byte("-" + reply + "\r\n")
	if f := c.outbox; f != nil {
		// An outbox writes the connection: the refusal goes after what is
		// queued, and before the connection closes.
		f.pushReplies(line)
		f.stop()
		f.wait()
		return err
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(refusalTimeout))
	_, _ = c.nc.Write(line)
	return err
}

// reject refuses a connection at accept with e: beyond maxclients, or by
// protected mode. Its own goroutine sends Redis's error and closes it
// (runConn): writing here, in the accept loop, could wait on a TLS
// handshake and stall every other connection. It reports whether that
// goroutine will; if not, the caller closes it.
func reject(cn connection, e replyError) bool { return cn.refuseLater(e.text) }

// localPeer reports whether cn comes from this host, as Redis 7's
// protected mode asks (connIsLocal): from a Unix socket, or an IP loopback
// address (127.0.0.0/8, ::1, or 127.0.0.0/8 mapped into IPv6, which is how
// a dual-stack listener sees IPv4 loopback).
func localPeer(cn connection) bool {
	if nc := cn.NetConn(); nc != nil {
		if _, unix := nc.RemoteAddr().(*net.UnixAddr); unix {
			return true
		}
	}
	ap, err := netip.ParseAddrPort(cn.RemoteAddr())
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// refuseLater sets the refusal runConn sends before reading anything.
func (c *conn) refuseLater(reply string) bool {
	c.refusal = reply
	return true
}
