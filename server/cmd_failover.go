package server

import (
	"math"
	"net"
	"strconv"
	"sync"
	"time"
)

// FAILOVER, Redis 6.2's planned switch of a master and one of its
// replicas (its table entry is in replicationFamily).

// failoverStateName is INFO's master_failover_state.
func (s *Server) failoverStateName() string {
	if v, ok := s.failoverState.Load().(string); ok {
		return v
	}
	return "no-failover"
}

// FAILOVER [TO host port [FORCE]] [TIMEOUT milliseconds]
// FAILOVER ABORT
//
// A planned switch, as Redis 6.2's: the master pauses writes, waits until
// the replica (the one named, else the first to catch up) has acknowledged
// the whole stream, then becomes its replica with PSYNC ... FAILOVER, which
// makes the replica a master continuing the same stream. Past TIMEOUT it
// gives up and resumes writes, unless FORCE, which switches anyway. It
// answers +OK at once; INFO's master_failover_state shows the progress.
func cmdFailover(c *client, args [][]byte, now time.Time) {
	s := c.srv
	if len(args) == 2 && equalFold(args[1], "abort") {
		s.failoverMu.Lock()
		f := s.failover
		s.failoverMu.Unlock()
		if f == nil {
			c.writeError(errNoFailover)
			return
		}
		f.abort()
		c.writeOK()
		return
	}
	var (
		timeout time.Duration
		host    string
		port    int64 = -1
		force   bool
	)
	for i := 1; i < len(args); i++ {
		switch a := args[i]; {
		case equalFold(a, "timeout") && i+1 < len(args) && timeout == 0:
			ms, ok := parseInt(args[i+1])
			if !ok {
				c.writeError(errNotInteger)
				return
			}
			if ms <= 0 {
				c.writeError(errFailoverTimeout)
				return
			}
			timeout = time.Duration(ms) * time.Millisecond
			i++
		case equalFold(a, "to") && i+2 < len(args) && host == "":
			p, ok := parseInt(args[i+2])
			if !ok {
				c.writeError(errNotInteger)
				return
			}
			host, port = string(args[i+1]), p
			i += 2
		case equalFold(a, "force") && !force:
			force = true
		default:
			c.writeError(errSyntax)
			return
		}
	}
	n := s.repl
	if n == nil {
		c.writeError(errNoReplication)
		return
	}
	s.failoverMu.Lock()
	defer s.failoverMu.Unlock()
	st := n.Status()
	switch {
	case s.failover != nil:
		c.writeError(errFailoverInProgress)
		return
	case st.Replica:
		c.writeError(errFailoverOnReplica)
		return
	case len(st.Replicas) == 0:
		c.writeError(errFailoverNoReplicas)
		return
	case force && (timeout == 0 || host == ""):
		c.writeError(errFailoverForce)
		return
	}
	if host != "" {
		found := false
		for _, r := range st.Replicas {
			if r.IP == host && int64(r.Port) == port {
				found = true
				if r.State != "online" {
					c.writeError(errFailoverNotOnline)
					return
				}
			}
		}
		if !found {
			c.writeError(errFailoverNotReplica)
			return
		}
	}
	f := &failover{host: host, port: int(port), timeout: timeout, force: force, stop: make(chan struct{})}
	s.failover = f
	s.failoverState.Store("waiting-for-sync")
	s.pauseUntil(math.MaxInt64, false, 0, now)
	f.pause = s.pause.Load()
	s.cfg.Logger.Info("FAILOVER requested", "to", net.JoinHostPort(host, strconv.Itoa(int(port))), "timeout", timeout, "force", force)
	go s.runFailover(f)
	c.writeOK()
}

// failover is a FAILOVER in progress.
type failover struct {
	host    string // "": any replica
	port    int
	timeout time.Duration // 0: none
	force   bool
	pause   *pauseState // the write pause it put in force
	stop    chan struct{}
	once    sync.Once
}

func (f *failover) abort() { f.once.Do(func() { close(f.stop) }) }

// runFailover waits for the target to catch up, then switches.
func (s *Server) runFailover(f *failover) {
	defer func() {
		s.liftPause(f.pause)
		s.failoverMu.Lock()
		s.failover = nil
		s.failoverMu.Unlock()
		s.failoverState.Store("no-failover")
	}()
	r, caughtUp := s.repl.WaitCaughtUp(f.host, f.port, f.timeout, f.stop)
	select {
	case <-f.stop:
		s.cfg.Logger.Warn("FAILOVER aborted")
		return
	default:
	}
	switch {
	case caughtUp:
	case f.force:
		r.IP, r.Port = f.host, f.port
	default:
		s.cfg.Logger.Warn("FAILOVER timed out: no replica acknowledged the whole stream; writes resume here")
		return
	}
	s.failoverState.Store("failover-in-progress")
	if err := s.repl.FailoverTo(r.IP, r.Port); err != nil {
		s.cfg.Logger.Error("FAILOVER failed", "err", err)
		return
	}
	s.cfg.Logger.Info("FAILOVER: this node is now a replica of the new master", "master", net.JoinHostPort(r.IP, strconv.Itoa(r.Port)))
}
