package engine

import (
	"net"
	"time"
)

// Limits.IdleTimeout, as Redis's timeout: a connection is closed when it has
// sent nothing and taken no reply bytes for that long, and when a command
// has not arrived whole that long after its first byte. Socket deadlines
// keep it: no goroutine watches the connections.

// writeChunk is how much of a reply is written under one deadline when
// there is an idle timeout: a client reading slowly but steadily is not
// idle.
const writeChunk = 64 << 10

// read reads more input, after the TLS handshake, under the idle timeout:
// between commands, the timeout of silence; inside one, what is left of the
// timeout since the command's first byte arrived. Were every byte to push
// the deadline back, a client sending a byte a second would hold its
// connection, and the server's buffer for its command, for ever; Redis
// closes such a client too, as its query buffer stops growing for long
// enough.
func (c *Conn) read() error {
	if !c.handshook {
		if err := c.handshake(); err != nil {
			return err
		}
	}
	if c.idle <= 0 {
		return c.rd.Fill()
	}
	if c.idleExempt {
		// Monitors and subscribers, as Redis's, are not subject to the
		// timeout: they only read.
		_ = c.nc.SetReadDeadline(time.Time{})
		return c.rd.Fill()
	}
	from := time.Now()
	if c.partialCommand() {
		from = monoStart.Add(time.Duration(c.cmdStart))
	}
	_ = c.nc.SetReadDeadline(from.Add(c.idle))
	err := c.rd.Fill()
	c.readAt = monoNow()
	return err
}

// partialCommand reports whether part of a command is buffered, and keeps
// cmdStart, when it began arriving: the read before the latest if its first
// byte came with the latest.
func (c *Conn) partialCommand() bool {
	n, sinceLastRead := c.rd.Pending()
	if n > 0 && sinceLastRead {
		c.cmdStart = c.readAt
	}
	return n > 0
}

// monoStart is where the idle timeout's readings (conn.readAt, cmdStart)
// count from: they are monotonic, so a step of the wall clock neither
// closes every connection nor spares an idle one.
var monoStart = time.Now()

func monoNow() int64 { return int64(time.Since(monoStart)) }

// write sends a batch's replies, all at once (flush).
// From an event loop, what the socket does not take at once is left for
// the goroutine the connection leaves for.
func (c *Conn) write(b []byte) (int, error) {
	if c.loop != nil {
		n, err := rawWrite(c.fd, b)
		if err == nil && n < len(b) {
			err = errLeaveLoop
		}
		return n, err
	}
	return writeIdle(c.nc, c.idle, b)
}

// idleWriter writes an outbox to its connection under the idle
// timeout.
type idleWriter struct {
	nc   net.Conn
	idle time.Duration
}

func (w idleWriter) Write(b []byte) (int, error) { return writeIdle(w.nc, w.idle, b) }

// writeIdle writes b to nc; under an idle timeout, each chunk must be taken
// within it.
func writeIdle(nc net.Conn, idle time.Duration, b []byte) (int, error) {
	if idle <= 0 {
		return nc.Write(b)
	}
	n := 0
	for n < len(b) {
		_ = nc.SetWriteDeadline(time.Now().Add(idle))
		k, err := nc.Write(b[n:min(len(b), n+writeChunk)])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
