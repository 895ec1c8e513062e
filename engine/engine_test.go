package engine

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/contain"
	"github.com/redcell/redcell/internal/testkit"
)

// echo is a Handler whose sessions answer each command as a simple string
// of its words, and obey a few words: "close" (NeedClose), "block" (it
// may block: NeedGoroutine first on a loop, then it answers where it
// runs), "panic". It knows nothing else, as the engine knows nothing of
// commands.
type echo struct {
	mu     sync.Mutex
	closed []error
}

func (h *echo) Accept(c *Conn) (Session, string) {
	if c.RemoteAddr() == "" {
		return nil, "ERR refused"
	}
	return &echoSession{h: h, c: c}, ""
}

type echoSession struct {
	h *echo
	c *Conn
}

func (s *echoSession) Run(args [][]byte, now time.Time) time.Time {
	words := make([]string, len(args))
	for i, a := range args {
		words[i] = string(a)
	}
	switch words[0] {
	case "close":
		s.c.WriteString("bye")
		s.c.Need(NeedClose)
		return now
	case "block":
		if s.c.OnLoop() {
			s.c.Need(NeedGoroutine) // not run here: run again off the loop
			return now
		}
		words = append(words, "off-loop")
	case "panic":
		panic("injected panic")
	case "stall": // the loop busy for a while, as a long batch keeps it
		d, _ := time.ParseDuration(words[1])
		time.Sleep(d)
	}
	s.c.WriteString(strings.Join(words, " "))
	return now
}

func (s *echoSession) Resume()       {}
func (s *echoSession) Pushed()       {}
func (s *echoSession) Recovered(any) { s.c.WriteError("ERR it panicked") }
func (s *echoSession) Closed(err error) {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	s.h.closed = append(s.h.closed, err)
}

func serveEcho(t *testing.T, loops int) (*Engine, string) {
	t.Helper()
	e := New(Config{EventLoops: loops}, &echo{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- e.Serve(ln) }()
	t.Cleanup(func() { require.NoError(t, e.Close()); require.NoError(t, <-served) })
	return e, ln.Addr().String()
}

// The engine serves a session's commands in order, pipelined or not, on an
// event loop and on a goroutine alike; a command that may block leaves the
// loop first and runs, with the rest of its batch, on the connection's own
// goroutine; NeedClose answers what was run and closes; a panic costs its
// connection alone, answered by the session's Recovered.
func TestEngineServesSessions(t *testing.T) {
	for _, loops := range []int{0, 1} {
		if loops > 0 && !HaveEventLoops {
			continue
		}
		_, addr := serveEcho(t, loops)
		c := testkit.Dial(t, addr)
		require.Equal(t, "+a b\r\n", c.DoInline("a b"))
		c.Write("one\r\nblock x\r\ntwo\r\n")
		require.Equal(t, "+one\r\n", c.Read())
		require.Equal(t, "+block x off-loop\r\n", c.Read(), "loops=%d", loops)
		require.Equal(t, "+two\r\n", c.Read())
		require.Equal(t, "+three\r\n", c.DoInline("three"), "served on, off the loop")

		c.Write("four\r\nclose\r\nfive\r\n")
		require.Equal(t, "+four\r\n", c.Read())
		require.Equal(t, "+bye\r\n", c.Read())
		c.ExpectClosed()

		victim, bystander := testkit.Dial(t, addr), testkit.Dial(t, addr)
		before := contain.Recovered()
		victim.Write("six\r\npanic\r\nseven\r\n")
		require.Equal(t, "-ERR it panicked\r\n", victim.Read(), "in place of the batch's replies")
		victim.ExpectClosed()
		require.Equal(t, "+eight\r\n", bystander.DoInline("eight"))
		require.Equal(t, before, contain.Recovered(), "the session records it (Recovered): the engine does not count it again")
	}
}

// A connection whose request waits in its socket is not idle, however
// long the event loop took to come to it: a batch of another connection
// that kept the loop busy past the idle timeout closed it (seen as
// protocol_test's TestIdleTimeout failing under load: its INFO connection
// reset while a client that never reads kept the loop busy).
func TestABusyLoopClosesNoConnectionWithARequestWaiting(t *testing.T) {
	if !HaveEventLoops {
		t.Skip("no event loops on this platform")
	}
	const idle = 150 * time.Millisecond
	e := New(Config{EventLoops: 1, Limits: Limits{IdleTimeout: idle}}, &echo{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- e.Serve(ln) }()
	t.Cleanup(func() { require.NoError(t, e.Close()); require.NoError(t, <-served) })

	busy, waiting := testkit.Dial(t, ln.Addr().String()), testkit.Dial(t, ln.Addr().String())
	require.Equal(t, "+hello\r\n", waiting.DoInline("hello"))
	busy.Write("stall 600ms\r\n")
	time.Sleep(100 * time.Millisecond) // the loop is in the stall: what comes now waits in the socket
	waiting.Write("ping\r\n")
	require.Equal(t, "+stall 600ms\r\n", busy.Read())
	require.Equal(t, "+ping\r\n", waiting.Read(), "answered, not closed as idle")
}
