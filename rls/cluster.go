package rls

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redcell/redcell/admission"
	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/resp"
)

// Cluster decides each call on the node that owns its key, so that Envoy
// may point at any node: here, through Local, when this node serves the
// key's slot with nothing moving (cluster.State.Mine); on the slot's owner
// over RESP otherwise, as the command the call stands for (CL.COUNT,
// CL.THROTTLE, CL.WINDOW), the calls for one node written on one
// connection and their replies read back in one round trip. MOVED and ASK
// are followed as a cluster client follows them; a slot this node is unsure
// of (one moving in or out, a topology not yet heard) is asked of this
// node's own RESP port, whose routing knows the move. It is safe for
// concurrent use.
type Cluster struct {
	Local *Local
	State *cluster.State
	// Self is this node's RESP address.
	Self string
	// User and Password authenticate to the other nodes: the cluster's
	// internal user (--cluster-auth-user, --cluster-auth-pass), or with
	// User empty the default user's password (--requirepass); both empty:
	// none.
	User, Password string

	mu    sync.Mutex
	pools map[string]*peerPool
}

var _ Decider = (*Cluster)(nil)

// Timeouts and bounds of forwarding.
const (
	forwardDialTimeout = 2 * time.Second
	forwardTimeout     = 5 * time.Second
	// maxRedirects bounds the MOVED, ASK and TRYAGAIN one call follows.
	maxRedirects = 5
	// tryAgainWait is the wait before a call answered TRYAGAIN (a slot
	// frozen for its last copy, milliseconds) is sent again.
	tryAgainWait = 5 * time.Millisecond
	// maxIdlePerNode bounds the idle connections kept to one node.
	maxIdlePerNode = 64
)

// route is where a call goes: addr, with ASKING before it.
type route struct {
	addr   string
	asking bool
}

// Decide implements Decider.
func (c *Cluster) Decide(ctx context.Context, now time.Time, calls []Call) error {
	var local []Call
	var localAt []int
	remote := map[route][]int{}
	for i := range calls {
		slot := cluster.Slot(calls[i].Key)
		if c.State.Mine(slot) {
			local, localAt = append(local, calls[i]), append(localAt, i)
			continue
		}
		r := route{addr: c.Self}
		if kind, node := c.State.Route(slot, false, false, false); kind == cluster.Moved {
			r.addr = net.JoinHostPort(node.IP, strconv.Itoa(node.Port))
		}
		remote[r] = append(remote[r], i)
	}
	if len(local) > 0 {
		if err := c.Local.Decide(ctx, now, local); err != nil {
			return err
		}
		for j, i := range localAt {
			calls[i] = local[j]
		}
	}
	for hop := 0; len(remote) > 0; hop++ {
		if hop > maxRedirects {
			return errors.New("too many redirections")
		}
		next := map[route][]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		errs := make(chan error, len(remote))
		waited := false
		for r, idx := range remote {
			wg.Go(func() {
				moved, err := c.forward(ctx, r, calls, idx)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for to, ids := range moved {
					next[to] = append(next[to], ids...)
				}
				mu.Unlock()
			})
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return err
		}
		if _, ok := next[route{addr: tryAgain}]; ok {
			ids := next[route{addr: tryAgain}]
			delete(next, route{addr: tryAgain})
			next[route{addr: c.Self}] = append(next[route{addr: c.Self}], ids...)
			waited = true
		}
		if waited {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(tryAgainWait):
			}
		}
		remote = next
	}
	return nil
}

// tryAgain stands for "send it again in a moment" among the routes.
const tryAgain = "\x00tryagain"

// forward sends the calls idx to r in one pipeline and reads their replies
// into calls; the calls redirected are returned by their new route.
func (c *Cluster) forward(ctx context.Context, r route, calls []Call, idx []int) (map[route][]int, error) {
	p, err := c.conn(r.addr)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", r.addr, err)
	}
	deadline := time.Now().Add(forwardTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = p.conn.SetDeadline(deadline)
	p.buf = p.buf[:0]
	for _, i := range idx {
		if r.asking {
			p.buf = resp.AppendCommand(p.buf, "ASKING")
		}
		p.buf = appendCall(p.buf, &calls[i])
	}
	if _, err := p.conn.Write(p.buf); err != nil {
		p.close()
		return nil, fmt.Errorf("node %s: %w", r.addr, err)
	}
	var moved map[route][]int
	var first error
	for _, i := range idx {
		if r.asking {
			if _, err := resp.ReadReply(p.r); err != nil {
				var re resp.ReplyError
				if !errors.As(err, &re) {
					p.close()
					return nil, fmt.Errorf("node %s: %w", r.addr, err)
				}
			}
		}
		v, err := resp.ReadReply(p.r)
		var re resp.ReplyError
		switch {
		case errors.As(err, &re):
			to, ok := redirect(string(re))
			if !ok {
				if first == nil {
					first = fmt.Errorf("node %s: %s", r.addr, re)
					if refusal := admission.Of(string(re)); refusal != admission.Admitted {
						first = &RefusedError{refusal, string(re)}
					}
				}
				continue
			}
			if moved == nil {
				moved = map[route][]int{}
			}
			moved[to] = append(moved[to], i)
		case err != nil:
			p.close()
			return nil, fmt.Errorf("node %s: %w", r.addr, err)
		default:
			if err := readResult(&calls[i], v); err != nil && first == nil {
				first = fmt.Errorf("node %s: %w", r.addr, err)
			}
		}
	}
	c.release(r.addr, p)
	return moved, first
}

// redirect reads a MOVED, ASK or TRYAGAIN reply into the route to retry
// on.
func redirect(text string) (route, bool) {
	f := strings.Fields(text)
	switch {
	case len(f) == 3 && f[0] == "MOVED":
		return route{addr: f[2]}, true
	case len(f) == 3 && f[0] == "ASK":
		return route{addr: f[2], asking: true}, true
	case len(f) > 0 && f[0] == "TRYAGAIN":
		return route{addr: tryAgain}, true
	}
	return route{}, false
}

// appendCall appends the RESP command that decides c on its key's node.
func appendCall(b []byte, c *Call) []byte {
	lim := c.Limit
	unit := strconv.FormatInt(lim.Unit.Seconds(), 10)
	key := string(c.Key)
	switch lim.Algorithm {
	case GCRA:
		return resp.AppendCommand(b, "CL.THROTTLE", key, strconv.FormatInt(lim.Burst, 10),
			strconv.FormatUint(uint64(lim.RequestsPerUnit), 10), unit, strconv.FormatInt(lim.quantity(c.Hits), 10))
	case SlidingWindow:
		return resp.AppendCommand(b, "CL.WINDOW", key, strconv.FormatUint(uint64(lim.RequestsPerUnit), 10), unit,
			strconv.FormatInt(lim.quantity(c.Hits), 10), "PRECISION", strconv.FormatInt(lim.Precision, 10))
	}
	return resp.AppendCommand(b, "CL.COUNT", key, unit, strconv.FormatInt(c.Hits, 10))
}

// readResult reads a forwarded call's reply: CL.COUNT's count, or the five
// integers of CL.THROTTLE and CL.WINDOW, whose durations come back in whole
// seconds (rounded as redis-cell rounds them).
func readResult(c *Call, v any) error {
	a, ok := v.([]any)
	ints := make([]int64, len(a))
	for i, x := range a {
		if ints[i], ok = x.(int64); !ok {
			break
		}
	}
	switch {
	case !ok:
	case c.Limit.Algorithm == FixedWindow && len(ints) == 2:
		c.Count = ints[0]
		return nil
	case c.Limit.Algorithm != FixedWindow && len(ints) == 5:
		c.Result.Limited, c.Result.Limit, c.Result.Remaining = ints[0] == 1, ints[1], ints[2]
		c.Result.RetryAfter = time.Duration(ints[3]) * time.Second
		c.Result.ResetAfter = time.Duration(ints[4]) * time.Second
		return nil
	}
	return fmt.Errorf("unexpected reply %v", v)
}

// peerConn is one connection to a node.
type peerConn struct {
	conn net.Conn
	r    *bufio.Reader
	buf  []byte
}

func (p *peerConn) close() { _ = p.conn.Close() }

// peerPool is the idle connections to one node.
type peerPool struct {
	idle chan *peerConn
}

// conn takes an idle connection to addr, or dials one and authenticates.
func (c *Cluster) conn(addr string) (*peerConn, error) {
	select {
	case p := <-c.pool(addr).idle:
		return p, nil
	default:
	}
	nc, err := net.DialTimeout("tcp", addr, forwardDialTimeout)
	if err != nil {
		return nil, err
	}
	p := &peerConn{conn: nc, r: bufio.NewReader(nc)}
	if c.Password != "" {
		_ = nc.SetDeadline(time.Now().Add(forwardTimeout))
		auth := []string{"AUTH", c.Password}
		if c.User != "" {
			auth = []string{"AUTH", c.User, c.Password}
		}
		if _, err := nc.Write(resp.AppendCommand(nil, auth...)); err != nil {
			p.close()
			return nil, err
		}
		if _, err := resp.ReadReply(p.r); err != nil {
			p.close()
			return nil, err
		}
	}
	return p, nil
}

// release puts p back among addr's idle connections, or closes it when
// there are enough.
func (c *Cluster) release(addr string, p *peerConn) {
	select {
	case c.pool(addr).idle <- p:
	default:
		p.close()
	}
}

func (c *Cluster) pool(addr string) *peerPool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pools == nil {
		c.pools = map[string]*peerPool{}
	}
	p := c.pools[addr]
	if p == nil {
		p = &peerPool{idle: make(chan *peerConn, maxIdlePerNode)}
		c.pools[addr] = p
	}
	return p
}

// Close closes the idle connections.
func (c *Cluster) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.pools {
	drain:
		for {
			select {
			case pc := <-p.idle:
				pc.close()
			default:
				break drain
			}
		}
	}
}
