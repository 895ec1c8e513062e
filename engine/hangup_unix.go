//go:build unix

package engine

import (
	"crypto/tls"
	"errors"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// WatchHangup watches, while a command waits on the connection's own
// goroutine (CL.ACQUIRE's BLOCK), for the client closing its end: hungUp is
// closed when it has. Nothing is read: the socket is peeked at, so a
// command the client sends meanwhile stays for the engine to read (and ends
// the watch: a client that still sends has not gone). stop ends the watch
// and must be called before the command returns. On an event loop, or a
// connection that is not TCP, hungUp is nil: never closed.
//
// Redis notices a blocked client's hangup because its event loop reads
// every socket; here the waiting goroutine is not reading, so without this
// a dead client would hold its place in a queue until its timeout.
func (c *Conn) WatchHangup() (hungUp <-chan struct{}, stop func()) {
	tcp := tcpOf(c.nc)
	if tcp == nil {
		return nil, func() {}
	}
	raw, err := tcp.SyscallConn()
	if err != nil {
		return nil, func() {}
	}
	closed := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var b [1]byte
		gone := false
		err := raw.Read(func(fd uintptr) bool {
			n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				return false // nothing yet: wait until the socket is readable
			}
			gone = n == 0 || err != nil // end of stream, or reset
			return true
		})
		if err == nil && gone {
			close(closed)
		}
	}()
	return closed, func() {
		// A deadline in the past wakes the peek; none is restored after,
		// as the engine sets its own before each read (Conn.read).
		_ = tcp.SetReadDeadline(time.Unix(1, 0))
		<-done
		_ = tcp.SetReadDeadline(time.Time{})
	}
}

// tcpOf is the TCP connection under nc, TLS or not; nil for another kind.
func tcpOf(nc net.Conn) *net.TCPConn {
	if t, ok := nc.(*tls.Conn); ok {
		nc = t.NetConn()
	}
	tcp, _ := nc.(*net.TCPConn)
	return tcp
}
