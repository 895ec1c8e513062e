package rls

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/redcell/redcell/admission"
	"github.com/redcell/redcell/internal/contain"
	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/server"
	"github.com/redcell/redcell/storage"
)

// failingDisk is durable mode's persistence, whose flushes fail once
// failing is set.
type failingDisk struct{ failing atomic.Bool }

func (d *failingDisk) Flush() error              { return nil }
func (d *failingDisk) BackgroundSave() bool      { return false }
func (d *failingDisk) Sync() error               { return nil }
func (d *failingDisk) Pending() int              { return 0 }
func (d *failingDisk) InFlight() int             { return 0 }
func (d *failingDisk) Failing() bool             { return d.failing.Load() }
func (d *failingDisk) Stats() storage.FlushStats { return storage.FlushStats{} }

const gcraAndWindow = `domain: api
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: tenant
    rate_limit: {unit: minute, requests_per_unit: 2, algorithm: gcra, burst: 1}
`

// fronts is one keyspace served by both fronts: RESP (a server.Server) and
// the rate limit service, deciding through the server's gate, as the daemon
// wires them.
type fronts struct {
	store *storage.Store
	srv   *server.Server
	resp  *testkit.Conn
	rig   *rig
}

func startFronts(t *testing.T, cfg server.Config, store *storage.Store) *fronts {
	t.Helper()
	clock := &manualClock{t: referenceNow}
	cfg.Now = clock.Now
	srv := server.New(cfg, store)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() { require.NoError(t, srv.Close()); require.NoError(t, <-served) })
	svc := NewService(loadString(t, gcraAndWindow), &Local{Store: store, Gate: srv.Gate()}, clock.Now, Options{}, nil)
	return &fronts{store: store, srv: srv, resp: testkit.Dial(t, ln.Addr().String()), rig: startRig(t, svc, store, clock)}
}

// Each refusal of the one admission path, through both fronts: RESP answers
// Redis's error; the rate limit service the gRPC code Envoy's
// failure_mode_deny reads (UNAVAILABLE for a node that cannot take changes
// now, INVALID_ARGUMENT for a key too long, RESOURCE_EXHAUSTED for the
// memory limit) with the same text; neither stores anything. A request of
// two descriptors whose second is refused charges neither: it is decided
// whole or not at all. A check (hits_addend 0) is answered wherever RESP
// answers a peek.
func TestEveryRefusalThroughBothFronts(t *testing.T) {
	long := strings.Repeat("x", 40)
	for _, c := range []struct {
		name    string
		cfg     server.Config
		store   storage.Config
		refuse  func(f *fronts)
		user    string // the refused request's second descriptor value
		code    codes.Code
		text    string
		peekers bool // a check (hits 0) is still answered
	}{
		{name: "READONLY", refuse: func(f *fronts) { f.srv.Gate().Refusing.Store(admission.RefuseReplica) },
			code: codes.Unavailable, text: admission.ReadOnly.Text(), peekers: true},
		{name: "NOREPLICAS", refuse: func(f *fronts) { f.srv.Gate().Refusing.Store(admission.RefuseFewReplicas) },
			code: codes.Unavailable, text: admission.NoReplicas.Text(), peekers: true},
		{name: "MISCONF", cfg: server.Config{DurableWrites: true, Persistence: &failingDisk{}},
			refuse: func(f *fronts) { f.srv.Gate().Persistence.(*failingDisk).failing.Store(true) },
			code:   codes.Unavailable, text: admission.Misconf.Text(), peekers: true},
		{name: "OOM", store: storage.Config{MaxMemory: 1}, refuse: func(f *fronts) { f.store.MeasureMemory() },
			code: codes.ResourceExhausted, text: admission.OOM.Text(), peekers: true},
		{name: "key too long", cfg: server.Config{Limits: server.Limits{MaxKeyLen: 32}}, refuse: func(*fronts) {}, user: long,
			code: codes.InvalidArgument, text: "ERR key too long: 56 bytes, --max-key-len is 32"},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := storage.New(c.store)
			f := startFronts(t, c.cfg, store)
			// Before: both fronts decide, and store.
			require.Equal(t, testkit.Ints(0, 2, 1, -1, 30), f.resp.Do("CL.THROTTLE", "before", "1", "2", "60"))
			resp := f.rig.call(t, request("api", desc(E{"user", "old"})))
			require.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)
			keys := store.Len()

			c.refuse(f)
			user := "new"
			if c.user != "" {
				user = c.user
			}
			key := "api_user_" + user + "_minute"
			require.Equal(t, "-"+c.text+"\r\n", f.resp.Do("CL.COUNT", key, "60"), "RESP")
			_, err := f.rig.client.ShouldRateLimit(context.Background(),
				request("api", desc(E{"tenant", "t1"}), desc(E{"user", user})))
			require.Equal(t, c.code, status.Code(err), "%v", err)
			require.Equal(t, c.text, status.Convert(err).Message())
			require.Equal(t, keys, store.Len(), "nothing stored: the request's first descriptor was not charged either")

			if c.peekers {
				require.Equal(t, testkit.Ints(0, 2, 1, -1, 30), f.resp.Do("CL.THROTTLE", "before", "1", "2", "60", "0"), "a peek over RESP")
				st := f.rig.call(t, request("api", withHits(desc(E{"user", "old"}), 0))).Statuses[0]
				require.Equal(t, uint32(1), st.LimitRemaining, "a check over the service")
			}
		})
	}
}

// A limited GCRA call stores nothing, so a master short of replicas
// answers it on both fronts, as redis-cell's answers are kept where
// nothing would be lost: only a decision that stores is refused.
func TestNoReplicasAnswersWhatStoresNothing(t *testing.T) {
	f := startFronts(t, server.Config{}, storage.New(storage.Config{}))
	for range 2 {
		f.rig.call(t, request("api", desc(E{"tenant", "t1"})))
	}
	f.srv.Gate().Refusing.Store(admission.RefuseFewReplicas)
	resp := f.rig.call(t, request("api", desc(E{"tenant", "t1"})))
	require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, resp.OverallCode, "limited: nothing to store, answered")
	require.Equal(t, testkit.Ints(1, 2, 0, 30, 60), f.resp.Do("CL.THROTTLE", "api_tenant_t1_minute_gcra", "1", "2", "60"),
		"the same over RESP")
	_, err := f.rig.client.ShouldRateLimit(context.Background(), request("api", desc(E{"tenant", "t2"})))
	require.Equal(t, codes.Unavailable, status.Code(err), "a new key would store: refused")
}

// Without --rls-response-headers an answer carries no RateLimit-* header,
// over the limit as within it, as envoyproxy/ratelimit adds none unless
// LIMIT_RESPONSE_HEADERS_ENABLED; with it, the over-limit answer has them.
func TestHeadersOnlyWhenAsked(t *testing.T) {
	for _, headers := range []bool{false, true} {
		r := newRig(t, loadString(t, twoAnHour), Options{ResponseHeaders: headers}, referenceNow)
		var last *pb.RateLimitResponse
		for range 3 {
			last = r.call(t, request("api", desc(E{"user", "a"})))
		}
		require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, last.OverallCode)
		if !headers {
			require.Empty(t, last.ResponseHeadersToAdd)
			continue
		}
		got := map[string]string{}
		for _, h := range last.ResponseHeadersToAdd {
			got[h.Key] = h.Value
		}
		require.Equal(t, map[string]string{"RateLimit-Limit": "2", "RateLimit-Remaining": "0", "RateLimit-Reset": "1216"}, got)
	}
}

// panicking is a decider with a bug.
type panicking struct{}

func (panicking) Decide(context.Context, time.Time, []Call) error {
	panic("injected panic in a decision")
}

// A panic in a call is contained to it: the call fails INTERNAL, the next
// one is served.
func TestPanicInACallCostsThatCall(t *testing.T) {
	store := storage.New(storage.Config{})
	clock := &manualClock{t: referenceNow}
	r := startRig(t, NewService(loadString(t, twoAnHour), panicking{}, clock.Now, Options{}, nil), store, clock)
	svc := r.svc

	before := contain.Recovered()
	contain.Allow(1)
	_, err := r.client.ShouldRateLimit(context.Background(), request("api", desc(E{"user", "a"})))
	require.Equal(t, codes.Internal, status.Code(err), "%v", err)
	require.Equal(t, before+1, contain.Recovered())
	svc.Use(&Local{Store: store}, clock.Now)
	require.Equal(t, uint32(1), r.call(t, request("api", desc(E{"user", "a"}))).Statuses[0].LimitRemaining, "served on")
}
