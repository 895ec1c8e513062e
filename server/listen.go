package server

import (
	"errors"
	"net"
)

// serve accepts connections on ln until Close, each served by its own
// goroutine (serveConn). When it returns every connection it accepted has
// been closed and its goroutine has ended, so no command runs after it.
func (s *Server) serve(ln net.Listener) error {
	gl := &guardListener{Listener: ln, srv: s, limits: s.limits, conns: make(map[*conn]struct{})}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		_ = ln.Close()
		return nil
	}
	s.listeners = append(s.listeners, gl)
	s.mu.Unlock()
	var err error
	for {
		nc, aerr := gl.Accept()
		if aerr != nil {
			err = aerr
			break
		}
		c := newConn(nc.(*guardConn), s.limits.MaxOutput, &s.outputTotal)
		if !s.accept(c) {
			_ = nc.Close()
			continue
		}
		gl.track(c)
		gl.live.Add(1)
		go func() {
			defer gl.live.Done()
			defer gl.untrack(c)
			s.serveConn(c)
		}()
	}
	gl.closeConns()
	gl.live.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

func (l *guardListener) track(c *conn) {
	l.mu.Lock()
	l.conns[c] = struct{}{}
	l.mu.Unlock()
}

func (l *guardListener) untrack(c *conn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
}

// closeConns closes the listener's open connections: their reads fail, and
// their goroutines end after the command they are running, if any. They are
// killed, so a command waiting on CLIENT PAUSE does not hold Serve until
// the pause ends.
func (l *guardListener) closeConns() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		if cl, ok := c.ctx.(*client); ok {
			cl.kill()
		}
		_ = c.nc.Close()
	}
}

// closeListeners closes every listener being served, and any Serve called
// later returns at once. Each serve then closes its connections.
func (s *Server) closeListeners() error {
	s.mu.Lock()
	s.stopped = true
	listeners := s.listeners
	s.listeners = nil
	s.mu.Unlock()
	var err error
	for _, l := range listeners {
		if cerr := l.Listener.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
			err = errors.Join(err, cerr)
		}
	}
	return err
}

// admit counts c among the open connections unless there are
// Limits.MaxClients already, and links c to its guard. It reports whether c
// was admitted.
func (s *Server) admit(conn connection, c *client) bool {
	s.mu.Lock()
	full := len(s.clients) >= s.limits.MaxClients
	if !full {
		s.clients[c] = struct{}{}
	}
	s.mu.Unlock()
	if full {
		return false
	}
	if g, ok := conn.NetConn().(*guardConn); ok {
		g.client = c
	}
	return true
}

// reject refuses a connection beyond maxclients. Its own goroutine sends
// Redis's error and closes it (guardConn.refuse): writing here, in the accept
// loop, could wait on a TLS handshake and stall every other connection.
func reject(conn connection) bool {
	g, ok := conn.NetConn().(*guardConn)
	if !ok {
		return false
	}
	g.refuseWith(errMaxClients)
	return true
}
