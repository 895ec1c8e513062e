package server

import (
	"errors"
	"net"

	"github.com/tidwall/redcon"
)

// serve runs one redcon server, sharing this Server's handler and state, on
// ln until Close. redcon serves one listener per server, so the plain and the
// TLS listener each get their own.
func (s *Server) serve(ln net.Listener) error {
	gl := &guardListener{Listener: ln, srv: s, limits: s.limits}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		_ = ln.Close()
		return nil
	}
	s.listeners = append(s.listeners, gl)
	s.mu.Unlock()
	rc := redcon.NewServerNetwork(ln.Addr().Network(), ln.Addr().String(), s.handle, s.accept, s.closed)
	err := rc.Serve(gl)
	// redcon has closed the connections but not waited for their
	// goroutines: a command may still be running, and could, say, SAVE to a
	// store its owner is about to close. No connection is accepted any
	// more, so the count only falls.
	gl.live.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// connEnded counts out a connection whose goroutine is ending (redcon calls
// closed last). Connections not accepted through a guardListener (tests)
// are not counted.
func connEnded(conn redcon.Conn) {
	if g, ok := conn.NetConn().(*guardConn); ok && g.ln != nil {
		g.ln.live.Done()
	}
}

// closeListeners closes every listener being served, and any Serve called
// later returns at once. Each redcon server then closes its connections.
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
// Limits.MaxClients already, links c to its guard, and puts its replies
// under the output limit. It reports whether c was admitted.
func (s *Server) admit(conn redcon.Conn, c *client) bool {
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
		g.ln.live.Add(1)
		g.client = c
		if s.limits.MaxOutput > 0 {
			c.conn = &limitedConn{Conn: conn, g: g, c: c, max: s.limits.MaxOutput}
		}
	}
	return true
}

// reject refuses a connection beyond maxclients. Its own goroutine sends
// Redis's error and closes it (guardConn.refuse): writing here, in the accept
// loop, could wait on a TLS handshake and stall every other connection.
func reject(conn redcon.Conn) bool {
	g, ok := conn.NetConn().(*guardConn)
	if !ok {
		return false
	}
	g.ln.live.Add(1)
	g.refuseWith(errMaxClients)
	return true
}
