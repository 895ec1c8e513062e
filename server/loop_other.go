//go:build !linux

package server

// Without epoll there are no event loops: a goroutine serves each
// connection (the Linux eventLoop says why loops exist).

const haveEventLoops = false

type eventLoop struct{}

type loops struct{}

func (s *Server) startLoops(int) (*loops, error) { return nil, nil }
func (ls *loops) take(*conn) bool                { return false }
func (ls *loops) stop()                          {}
func (l *eventLoop) kill(*conn)                  {}
func (l *eventLoop) queueFlush(*conn)            {}

func rawRead(int, []byte) (int, error)  { panic("server: no event loops on this platform") }
func rawWrite(int, []byte) (int, error) { panic("server: no event loops on this platform") }
