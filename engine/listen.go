package engine

import (
	"errors"
	"net"
	"sync"
	"time"
)

// listener is a listener being served, with the connections it accepted.
type listener struct {
	net.Listener
	e *Engine
	// live counts the connections whose goroutine has yet to end: Serve
	// waits for them, so that no command runs after it returns.
	live  sync.WaitGroup
	mu    sync.Mutex
	conns map[*Conn]struct{} // open connections, closed by serve at the end
}

// Accept returns the next connection. Errors other than a closed listener
// (EMFILE when out of file descriptors, ECONNABORTED) are retried with a
// growing pause, as net/http does: retrying at once would spin in a loop
// that pins a core.
func (l *listener) Accept() (net.Conn, error) {
	var pause time.Duration
	for {
		c, err := l.Listener.Accept()
		if err == nil || errors.Is(err, net.ErrClosed) {
			return c, err
		}
		pause = min(max(2*pause, 5*time.Millisecond), time.Second)
		l.e.logger.Warn("accept failed; retrying", "err", err, "pause", pause)
		time.Sleep(pause)
	}
}

// serve accepts connections on ln until Close, each served by an event loop
// if plain says its connections are plain sockets and loops are on
// (eventLoops), or else by its own goroutine (serveConn). When it returns every connection it accepted has
// been closed and its goroutine has ended, so no command runs after it.
func (e *Engine) serve(ln net.Listener, plain bool) error {
	l := &listener{Listener: ln, e: e, conns: make(map[*Conn]struct{})}
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		_ = ln.Close()
		return nil
	}
	e.listeners = append(e.listeners, l)
	e.mu.Unlock()
	var lp *loops
	var err error
	if plain && haveEventLoops {
		lp, err = e.startLoops(e.cfg.EventLoops)
	}
	if err != nil {
		e.logger.Error("event loops unavailable; a goroutine serves each connection", "err", err)
	}
	for {
		nc, aerr := l.Accept()
		if aerr != nil {
			err = aerr
			break
		}
		c := newConn(e, nc)
		if !e.accept(c) {
			_ = nc.Close()
			continue
		}
		l.track(c)
		l.live.Add(1)
		c.release = func() {
			l.untrack(c)
			l.live.Done()
		}
		if c.refusal == "" && lp.take(c) {
			continue
		}
		go e.serveConn(c)
	}
	l.closeConns()
	l.live.Wait()
	lp.stop()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

func (l *listener) track(c *Conn) {
	l.mu.Lock()
	l.conns[c] = struct{}{}
	l.mu.Unlock()
}

func (l *listener) untrack(c *Conn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
}

// closeConns closes the listener's open connections: their reads fail, and
// their goroutines end after the command they are running, if any. They are
// killed, so a command waiting on CLIENT PAUSE does not hold Serve until
// the pause ends.
func (l *listener) closeConns() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		if !c.Kill() {
			c.Abort()
		}
	}
}

// closeListeners closes every listener being served, and any Serve called
// later returns at once. Each serve then closes its connections.
func (e *Engine) closeListeners() error {
	e.mu.Lock()
	e.stopped = true
	listeners := e.listeners
	e.listeners = nil
	e.mu.Unlock()
	var err error
	for _, l := range listeners {
		if cerr := l.Listener.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
			err = errors.Join(err, cerr)
		}
	}
	return err
}
