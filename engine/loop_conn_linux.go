//go:build linux

package engine

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A connection in and out of an event loop: taken from Go's netpoller
// (take, detach), handed back to a goroutine of its own (promote), or ended
// (finish); and the raw system calls a loop reads and writes its sockets
// with.

// take moves c into one of the loops, if it can be served by one: a plain
// TCP connection. It reports false, with c untouched, if not; then c is
// served by its own goroutine.
func (ls *loops) take(c *Conn) bool {
	if ls == nil || len(ls.all) == 0 {
		return false
	}
	sc, ok := c.nc.(socketConn) // TCP or Unix; TLS is not
	if !ok {
		return false
	}
	fd, err := detach(sc)
	if err != nil {
		return false
	}
	l := ls.all[ls.next%len(ls.all)]
	ls.next++
	c.modeMu.Lock()
	c.fd = fd
	c.loop = l
	c.nc = nil
	c.modeMu.Unlock()
	l.mu.Lock()
	l.added = append(l.added, c)
	l.mu.Unlock()
	l.wake()
	return true
}

// socketConn is a connection whose socket an event loop can serve.
type socketConn interface {
	SyscallConn() (syscall.RawConn, error)
	Close() error
}

// detach takes tc's socket out of Go's netpoller: a duplicate of it, still
// non-blocking, for the loop's own epoll set, and tc closed (which takes
// the original out of the netpoller's epoll set).
func detach(tc socketConn) (int, error) {
	rc, err := tc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(f uintptr) {
		fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, derr
	}
	_ = tc.Close()
	return fd, nil
}

// finish closes c and ends it as serveConn does.
func (l *eventLoop) finish(c *Conn, err error) {
	delete(l.conns, int32(c.fd))
	_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, c.fd, nil)
	c.modeMu.Lock()
	_ = unix.Close(c.fd)
	c.fd = -1
	c.loop = nil
	c.closed = true
	c.modeMu.Unlock()
	c.ended(err)
}

// promote takes c out of the loop and serves it from a goroutine of its own,
// through Go's netpoller, from where the loop left it: a command to run
// again (c.pending), replies not yet written, a refusal to send.
func (l *eventLoop) promote(c *Conn) {
	delete(l.conns, int32(c.fd))
	_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, c.fd, nil)
	f := os.NewFile(uintptr(c.fd), c.addr)
	nc, err := net.FileConn(f) // a duplicate of the socket, in the netpoller
	_ = f.Close()
	c.modeMu.Lock()
	c.fd = -1
	c.loop = nil
	c.nc = nc
	c.modeMu.Unlock()
	if err != nil {
		l.e.logger.Error("event loop: cannot hand a connection to a goroutine", "err", err)
		c.closed = true
		c.ended(err)
		return
	}
	if c.killed.Load() {
		_ = nc.Close() // killed while it left: its goroutine ends at once
	}
	go l.e.serveConn(c)
}

// rawRead reads from a loop's socket for resp.Reader.Fill: no input yet is
// no error (the loop waits for more), none ever again is io.EOF.
func rawRead(fd int, p []byte) (int, error) {
	n, err := rawIO(unix.SYS_READ, fd, p)
	switch {
	case n < 0:
		return 0, nil
	case n == 0 && err == nil && len(p) > 0:
		return 0, io.EOF
	}
	return n, err
}

// rawWrite writes b to a loop's socket, as much as it takes now.
func rawWrite(fd int, b []byte) (int, error) {
	n, err := rawIO(unix.SYS_WRITE, fd, b)
	return max(n, 0), err
}

// rawIO is one read(2) or write(2) (trap) on a non-blocking socket, retried
// when a signal interrupts it; -1 when it would block. It is a raw system
// call: one that never waits needs none of the scheduler's bookkeeping
// around a call that might block (entersyscall, exitsyscall), which a loop
// would pay twice per request: a one-byte write and read on a socket pair
// took 3.5-3.9 us through unix.Write and unix.Read, 2.6-2.8 us raw (go test
// -bench, six runs each, this 2-core machine).
func rawIO(trap uintptr, fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, _, errno := unix.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		switch errno {
		case 0:
			return int(n), nil
		case unix.EINTR:
		case unix.EAGAIN:
			return -1, nil
		default:
			return 0, errno
		}
	}
}
