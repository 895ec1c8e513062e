//go:build !linux

package engine

// Without epoll there are no event loops: a goroutine serves each
// connection (the Linux eventLoop says why loops exist).

const haveEventLoops = false

type eventLoop struct{}

type loops struct{}

func (e *Engine) startLoops(int) (*loops, error) { return nil, nil }
func (ls *loops) take(*Conn) bool                { return false }
func (ls *loops) stop()                          {}
func (l *eventLoop) kill(*Conn)                  {}
func (l *eventLoop) queueFlush(*Conn)            {}

func rawRead(int, []byte) (int, error)  { panic("engine: no event loops on this platform") }
func rawWrite(int, []byte) (int, error) { panic("engine: no event loops on this platform") }
