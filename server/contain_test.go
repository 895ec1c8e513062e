package server

import (
	"bytes"
	"crypto/tls"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/engine"
	"github.com/redcell/redcell/internal/contain"
	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/storage"
)

// addPanicCommand registers DEBUG.PANIC key [arg ...] on srv alone: a write
// of its key that panics, as a bug in a command would. It is no command of
// the server's (newCommandTable): tests give it to the one server they try
// containment on.
func addPanicCommand(srv *Server) {
	srv.commands.register(&command{name: "debug.panic", arity: -2, flags: []string{"write"}, acl: []string{"@write"},
		firstKey: 1, lastKey: 1, step: 1, keyFlags: []string{"RW"},
		run: func(c *client, args [][]byte, _ time.Time) { panic("injected panic on " + string(args[1])) }})
}

// lockedBuffer is a log sink safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// syncedPersistence is a Persistence whose syncs always succeed: durable
// mode's path, without a disk.
type syncedPersistence struct{ failingPersistence }

func (syncedPersistence) Sync() error   { return nil }
func (syncedPersistence) Failing() bool { return false }

// A command that panics costs its connection alone, on each way a
// connection is served: an event loop, a goroutine of its own, TLS, durable
// mode on either. Its client is answered an error and disconnected; the
// log names the command, never its arguments; the panic is counted; every
// other connection, and every limit stored, its own included, serve on.
// Inside EXEC, the transaction's shard locks are released: another client
// decides on the same key at once.
func TestPanicInACommandCostsOneConnection(t *testing.T) {
	pki := testkit.NewPKI(t)
	cert, err := tls.LoadX509KeyPair(pki.ServerCert, pki.ServerKey)
	require.NoError(t, err)
	paths := []struct {
		name  string
		cfg   Config
		tls   bool
		loops bool // served by an event loop
	}{
		{name: "event loop", cfg: Config{EventLoops: 1}, loops: true},
		{name: "goroutine", cfg: Config{EventLoops: -1}},
		{name: "TLS", cfg: Config{EventLoops: 1}, tls: true},
		{name: "durable on an event loop", cfg: Config{EventLoops: 1, DurableWrites: true, Persistence: syncedPersistence{}}, loops: true},
		{name: "durable on a goroutine", cfg: Config{EventLoops: -1, DurableWrites: true, Persistence: syncedPersistence{}}},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			if p.loops && !engine.HaveEventLoops {
				t.Skip("no event loops on this platform")
			}
			var log lockedBuffer
			at := time.Unix(1_700_000_000, 0)
			cfg := p.cfg
			cfg.Now = func() time.Time { return at }
			cfg.Logger = slog.New(slog.NewJSONHandler(&log, nil))
			srv := New(cfg, storage.New(storage.Config{Shards: 4}))
			addPanicCommand(srv)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			served := make(chan error, 1)
			dial := func() *testkit.Conn { return testkit.Dial(t, ln.Addr().String()) }
			if p.tls {
				go func() {
					served <- srv.ServeTLS(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
				}()
				dial = func() *testkit.Conn {
					conn, err := tls.Dial("tcp", ln.Addr().String(), pki.ClientTLS())
					require.NoError(t, err)
					return testkit.NewConn(t, conn, 4096)
				}
			} else {
				go func() { served <- srv.Serve(ln) }()
			}
			t.Cleanup(func() { require.NoError(t, srv.Close()); require.NoError(t, <-served) })

			bystander, victim := dial(), dial()
			require.Equal(t, testkit.Ints(0, 5, 4, -1, 60), bystander.Do("CL.THROTTLE", "b", "4", "1", "60"))
			require.Equal(t, testkit.Ints(0, 5, 4, -1, 60), victim.Do("CL.THROTTLE", "v", "4", "1", "60"))
			if p.loops {
				require.True(t, onLoop(t, srv, victim.Do("CLIENT", "ID")), "the victim is served by the loop")
			}

			before := contain.Recovered()
			contain.Allow(2)
			victim.Write(testkit.Command("DEBUG.PANIC", "v", "hunter2") + testkit.Command("PING"))
			require.Equal(t, "-ERR internal error while running 'debug.panic': the connection is closed, the server serves on (see its log)\r\n",
				victim.Read(), "the panic's answer, and nothing after it")
			victim.ExpectClosed()

			require.Equal(t, testkit.Ints(0, 5, 3, -1, 120), bystander.Do("CL.THROTTLE", "b", "4", "1", "60"), "the bystander's limit survives")
			require.Equal(t, testkit.Ints(0, 5, 3, -1, 120), bystander.Do("CL.THROTTLE", "v", "4", "1", "60"), "the victim's limit survives")

			// Inside EXEC: the queued CL.THROTTLE ran and stored, then the
			// panic; the key's shard lock, which EXEC held, is free.
			tx := dial()
			require.Equal(t, "+OK\r\n", tx.Do("MULTI"))
			require.Equal(t, "+QUEUED\r\n", tx.Do("CL.THROTTLE", "t", "4", "1", "60"))
			require.Equal(t, "+QUEUED\r\n", tx.Do("DEBUG.PANIC", "t"))
			execReply := tx.Do("EXEC")
			require.True(t, strings.HasPrefix(execReply, "-ERR internal error while running 'debug.panic'"), execReply)
			tx.ExpectClosed()
			require.Equal(t, testkit.Ints(0, 5, 3, -1, 120), bystander.Do("CL.THROTTLE", "t", "4", "1", "60"),
				"decided at once on the key EXEC held: its lock was released")

			require.Equal(t, before+2, contain.Recovered())
			require.Contains(t, bystander.Do("INFO", "stats"), "redcell_panics:")
			require.Equal(t, "+PONG\r\n", dial().Do("PING"), "a new connection is served")
			logged := log.String()
			require.Equal(t, 2, strings.Count(logged, `"msg":"panic recovered","where":"resp","command":"debug.panic","panic":"injected panic on `), logged)
			require.Contains(t, logged, "contain_test.go", "the stack")
			require.NotContains(t, logged, "hunter2", "never the arguments")
		})
	}
}
