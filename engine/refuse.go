package engine

import (
	"errors"
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
func (c *Conn) refuseInput(err error) error {
	var pe *resp.ProtocolError
	if errors.As(err, &pe) {
		return c.refuse(pe.Reply, err)
	}
	if errors.Is(err, resp.ErrQueryBufferLimit) {
		c.e.logger.Warn("closing client that reached max query buffer length",
			"addr", c.addr, "limit", c.e.limits.MaxQueryLen)
	}
	return err
}

// refuse sends reply as an error, after the TLS handshake if it has yet to
// run, and returns err, which makes serveConn close the connection.
func (c *Conn) refuse(reply string, err error) error {
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
