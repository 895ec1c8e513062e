package rls

import (
	"context"
	"crypto/tls"
	"log/slog"
	"strings"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	cachetypes "github.com/envoyproxy/go-control-plane/pkg/cache/types"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/redcell/redcell/internal/testkit"
)

const xdsNode = "envoy-ratelimit"

// limitConfig is a RateLimitConfig named name of domain whose descriptor
// key "user" allows rpu an hour.
func limitConfig(name, domain string, rpu uint32) *rlsconf.RateLimitConfig {
	return &rlsconf.RateLimitConfig{Name: name, Domain: domain, Descriptors: []*rlsconf.RateLimitDescriptor{{
		Key: "user", RateLimit: &rlsconf.RateLimitPolicy{Unit: rlsconf.RateLimitUnit_HOUR, RequestsPerUnit: rpu}}}}
}

// xdsRig is a service whose rules come from a real management server
// (testkit.XDSServer), through an XDS client, with its log kept.
type xdsRig struct {
	*rig
	mgmt    *testkit.XDSServer
	xds     *XDS
	log     *testkit.LockedBuffer
	metrics *Metrics
}

func newXDSRig(t *testing.T, serverTLS, clientTLS *tls.Config, opts LoadOptions) *xdsRig {
	t.Helper()
	x := &xdsRig{mgmt: testkit.StartXDSServer(t, "127.0.0.1:0", serverTLS), log: &testkit.LockedBuffer{}, metrics: NewMetrics()}
	x.rig = newRig(t, nil, Options{}, referenceNow)
	x.rig.svc.metrics = x.metrics
	x.xds = &XDS{Server: x.mgmt.Addr, Node: XDSNode(xdsNode, map[string]string{"zone": "a"}), TLS: clientTLS,
		Headers: map[string]string{"x-tenant": "blue"}, Options: opts, Service: x.svc, Metrics: x.metrics,
		Logger: slog.New(slog.NewTextHandler(x.log, nil)), MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { x.xds.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return x
}

// answer is the status of user=u in domain, a check that adds nothing.
func (x *xdsRig) answer(t *testing.T, domain string) *pb.RateLimitResponse_DescriptorStatus {
	t.Helper()
	return x.call(t, request(domain, withHits(desc(E{"user", "u"}), 0))).Statuses[0]
}

// waitLimit waits until domain's user rule allows rpu an hour, and returns
// how long that took.
func (x *xdsRig) waitLimit(t *testing.T, domain string, rpu uint32) time.Duration {
	t.Helper()
	start := time.Now()
	require.Eventually(t, func() bool {
		resp, err := x.client.ShouldRateLimit(context.Background(), request(domain, withHits(desc(E{"user", "u"}), 0)))
		return err == nil && resp.Statuses[0].GetCurrentLimit().GetRequestsPerUnit() == rpu
	}, 10*time.Second, 2*time.Millisecond, "%s never allowed %d an hour; log:\n%s", domain, rpu, x.log)
	return time.Since(start)
}

func isACK(version string) func(*discovery.DiscoveryRequest) bool {
	return func(r *discovery.DiscoveryRequest) bool {
		return r.GetVersionInfo() == version && r.GetErrorDetail() == nil && r.GetResponseNonce() != ""
	}
}

// Until its first snapshot the service answers UNAVAILABLE, never an OK
// that limits nothing; the first snapshot is applied and ACKed with its
// version and nonce, the node and the stream's headers as configured; a
// newer one is in force within a second, the counters kept.
func TestXDSFirstSnapshotThenAnUpdate(t *testing.T) {
	x := newXDSRig(t, nil, nil, LoadOptions{})
	_, err := x.client.ShouldRateLimit(context.Background(), request("api", desc(E{"user", "u"})))
	require.Equal(t, codes.Unavailable, status.Code(err), "before any snapshot: %v", err)
	require.Equal(t, "the rate limit service has no rules yet: it waits for its first configuration", status.Convert(err).Message())

	v := x.mgmt.Set(t, xdsNode, limitConfig("api-rules", "api", 3))
	x.waitLimit(t, "api", 3)
	ack := x.mgmt.WaitRequest(t, "the ACK of version "+v, isACK(v))
	require.Equal(t, RateLimitConfigType, ack.GetTypeUrl())
	require.Equal(t, xdsNode, ack.GetNode().GetId())
	require.Equal(t, "a", ack.GetNode().GetMetadata().GetFields()["zone"].GetStringValue())
	require.Empty(t, ack.GetResourceNames(), "every resource of the type: no names asked")
	require.Equal(t, []string{"blue"}, x.mgmt.Headers()[0].Get("x-tenant"))

	for left := uint32(3); left > 0; left-- {
		require.Equal(t, left-1, x.call(t, request("api", desc(E{"user", "u"}))).Statuses[0].LimitRemaining)
	}

	v = x.mgmt.Set(t, xdsNode, limitConfig("api-rules", "api", 5))
	took := x.waitLimit(t, "api", 5)
	require.Less(t, took, time.Second, "an update is in force within a second")
	x.mgmt.WaitRequest(t, "the ACK of version "+v, isACK(v))
	require.Equal(t, uint32(2), x.answer(t, "api").LimitRemaining, "the 3 hits counted under the old rule count under the new")
	require.Equal(t, 2.0, testutil.ToFloat64(x.metrics.loads.WithLabelValues("success")))
	require.Equal(t, 1.0, testutil.ToFloat64(x.metrics.rulesLoaded))
	require.Contains(t, x.log.String(), `msg="rate limit configuration loaded" xds_server=`+x.mgmt.Addr+` version=2 resources=1 domains=api`)
	require.Equal(t, "api-rules", x.svc.Rules().Lookup("api", []Entry{{"user", "u"}}).Rule.Where, "a rule names its resource")
}

// A snapshot the loader refuses is NACKed with the resource's name and the
// reason, the version in force named; the rules in force stay. The
// management server re-sends it at once after each NACK: the storm is
// slowed to a few NACKs a second and logged once. A fixed snapshot then
// lands within a second.
func TestXDSRefusedSnapshotIsNACKedAndTheRulesStay(t *testing.T) {
	x := newXDSRig(t, nil, nil, LoadOptions{})
	good := x.mgmt.Set(t, xdsNode, limitConfig("api-rules", "api", 3))
	x.waitLimit(t, "api", 3)

	bad := limitConfig("broken-rules", "other", 1)
	bad.Descriptors[0].RateLimit.Unit = rlsconf.RateLimitUnit_UNKNOWN
	badVersion := x.mgmt.Set(t, xdsNode, limitConfig("api-rules", "api", 9), bad)
	nack := x.mgmt.WaitRequest(t, "a NACK", func(r *discovery.DiscoveryRequest) bool { return r.GetErrorDetail() != nil })
	require.Equal(t, "broken-rules: invalid rate limit unit 'UNKNOWN'", nack.GetErrorDetail().GetMessage())
	require.Equal(t, int32(codes.InvalidArgument), nack.GetErrorDetail().GetCode())
	require.Equal(t, good, nack.GetVersionInfo(), "a NACK names the version in force")
	require.Equal(t, uint32(3), x.answer(t, "api").GetCurrentLimit().GetRequestsPerUnit(), "the rules in force stay")

	nacks := func() int {
		n := 0
		for _, r := range x.mgmt.Requests() {
			if r.GetErrorDetail() != nil {
				n++
			}
		}
		return n
	}
	before := nacks()
	time.Sleep(1500 * time.Millisecond) // the storm's rate is what is measured
	during := nacks() - before
	require.LessOrEqual(t, during, 12, "NACKs in 1.5 s of the management server re-sending version %s", badVersion)
	require.Greater(t, during, 1, "the NACKs go on: the server must learn the fix is needed")
	require.Equal(t, 1, strings.Count(x.log.String(), "rate limit configuration refused"), "logged once:\n%s", x.log)
	require.Equal(t, 1.0, testutil.ToFloat64(x.metrics.loads.WithLabelValues("error")), "loaded once")

	fixed := x.mgmt.Set(t, xdsNode, limitConfig("api-rules", "api", 9))
	took := x.waitLimit(t, "api", 9)
	require.Less(t, took, time.Second, "the fix lands within a second of the storm")
	x.mgmt.WaitRequest(t, "the ACK of the fix", isACK(fixed))
}

// Two domains in two resources; a snapshot without one of them answers
// it as an unknown domain (OK, no limit), the other keeping its counters; a
// snapshot whose type is empty, and one without the type, leave no rules
// (every domain unknown), never UNAVAILABLE again.
func TestXDSDomainsRemovedAndEmptySnapshots(t *testing.T) {
	x := newXDSRig(t, nil, nil, LoadOptions{})
	x.mgmt.Set(t, xdsNode, limitConfig("a", "alpha", 4), limitConfig("b", "beta", 6))
	x.waitLimit(t, "alpha", 4)
	x.waitLimit(t, "beta", 6)
	x.call(t, request("alpha", desc(E{"user", "u"})))

	v := x.mgmt.Set(t, xdsNode, limitConfig("a", "alpha", 4))
	x.mgmt.WaitRequest(t, "the ACK of version "+v, isACK(v))
	unknown := x.answer(t, "beta")
	require.Equal(t, pb.RateLimitResponse_OK, unknown.Code)
	require.Nil(t, unknown.CurrentLimit, "a removed domain is an unknown one")
	require.Equal(t, uint32(3), x.answer(t, "alpha").LimitRemaining, "the domain kept keeps its count")

	v = x.mgmt.Set(t, xdsNode)
	x.mgmt.WaitRequest(t, "the ACK of the empty version "+v, isACK(v))
	require.Nil(t, x.answer(t, "alpha").CurrentLimit, "an empty snapshot leaves no rules")
	require.Equal(t, []string(nil), x.svc.Rules().Domains())

	x.mgmt.Set(t, xdsNode, limitConfig("a", "alpha", 4))
	x.waitLimit(t, "alpha", 4)
	v = x.mgmt.SetResources(t, xdsNode, map[resourcev3.Type][]cachetypes.Resource{})
	require.Eventually(t, func() bool { return x.answer(t, "alpha").CurrentLimit == nil }, 10*time.Second, 5*time.Millisecond,
		"a snapshot without the type (version %s) leaves no rules", v)
}

// Two resources of one domain are refused as two files of one domain are,
// unless domains merge (--rls-merge-domains).
func TestXDSMergeDomainsAcrossResources(t *testing.T) {
	a := limitConfig("part-a", "api", 4)
	b := &rlsconf.RateLimitConfig{Name: "part-b", Domain: "api", Descriptors: []*rlsconf.RateLimitDescriptor{{
		Key: "tenant", RateLimit: &rlsconf.RateLimitPolicy{Unit: rlsconf.RateLimitUnit_MINUTE, RequestsPerUnit: 7}}}}

	x := newXDSRig(t, nil, nil, LoadOptions{})
	x.mgmt.Set(t, xdsNode, a, b)
	nack := x.mgmt.WaitRequest(t, "a NACK", func(r *discovery.DiscoveryRequest) bool { return r.GetErrorDetail() != nil })
	require.Equal(t, "part-b: duplicate domain 'api' in config file", nack.GetErrorDetail().GetMessage())

	x = newXDSRig(t, nil, nil, LoadOptions{MergeDomains: true})
	x.mgmt.Set(t, xdsNode, a, b)
	x.waitLimit(t, "api", 4)
	tenant := x.call(t, request("api", desc(E{"tenant", "t"}))).Statuses[0]
	require.Equal(t, uint32(7), tenant.GetCurrentLimit().GetRequestsPerUnit())
	require.Equal(t, pb.RateLimitResponse_RateLimit_MINUTE, tenant.GetCurrentLimit().GetUnit())
}

// The management server dies: the rules in force serve meanwhile. It comes
// back empty, counting versions from 1 again, with new rules: they are
// applied within a second of their snapshot, though the version was seen
// before.
func TestXDSManagementServerRestarted(t *testing.T) {
	x := newXDSRig(t, nil, nil, LoadOptions{})
	x.mgmt.Set(t, xdsNode, limitConfig("api-rules", "api", 3))
	x.mgmt.Set(t, xdsNode, limitConfig("api-rules", "api", 4))
	x.waitLimit(t, "api", 4)

	x.mgmt.Stop()
	require.Eventually(t, func() bool { return strings.Contains(x.log.String(), "lost the xDS management server") }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, uint32(4), x.answer(t, "api").GetCurrentLimit().GetRequestsPerUnit(), "the rules in force serve meanwhile")

	x.mgmt.Restart(t)
	v := x.mgmt.Set(t, xdsNode, limitConfig("api-rules", "api", 8))
	require.Equal(t, "1", v)
	took := x.waitLimit(t, "api", 8)
	require.Less(t, took, time.Second, "reconnected and applied within a second")
	x.mgmt.WaitRequest(t, "the ACK of the new server's version 1", isACK("1"))
}

// Mutual TLS to the management server: with the CA and a client
// certificate the rules come; a client without a certificate gets none,
// and says why in the log.
func TestXDSMutualTLS(t *testing.T) {
	pki := testkit.NewPKI(t)
	serverCert, err := tls.LoadX509KeyPair(pki.ServerCert, pki.ServerKey)
	require.NoError(t, err)
	serverTLS := &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientCAs: pki.Pool, ClientAuth: tls.RequireAndVerifyClientCert}

	clientTLS, err := XDSTLSConfig(pki.CA, pki.ClientCert, pki.ClientKey, "")
	require.NoError(t, err)
	x := newXDSRig(t, serverTLS, clientTLS, LoadOptions{})
	x.mgmt.Set(t, xdsNode, limitConfig("api-rules", "api", 3))
	x.waitLimit(t, "api", 3)

	noCert, err := XDSTLSConfig(pki.CA, "", "", "")
	require.NoError(t, err)
	y := newXDSRig(t, serverTLS, noCert, LoadOptions{})
	y.mgmt.Set(t, xdsNode, limitConfig("api-rules", "api", 3))
	require.Eventually(t, func() bool { return strings.Contains(y.log.String(), "cannot reach the xDS management server") },
		10*time.Second, 5*time.Millisecond)
	_, err = y.client.ShouldRateLimit(context.Background(), request("api", desc(E{"user", "u"})))
	require.Equal(t, codes.Unavailable, status.Code(err), "no rules came: %v", err)

	_, err = XDSTLSConfig(pki.ClientKey, "", "", "")
	require.ErrorContains(t, err, "no PEM certificate in it")
}

// A snapshot for another node is not this server's.
func TestXDSSnapshotsAreKeyedByNode(t *testing.T) {
	x := newXDSRig(t, nil, nil, LoadOptions{})
	x.mgmt.Set(t, "another-node", limitConfig("api-rules", "api", 3))
	x.mgmt.WaitRequest(t, "the subscription", func(r *discovery.DiscoveryRequest) bool { return r.GetNode().GetId() == xdsNode })
	_, err := x.client.ShouldRateLimit(context.Background(), request("api", desc(E{"user", "u"})))
	require.Equal(t, codes.Unavailable, status.Code(err))
	x.mgmt.Set(t, xdsNode, limitConfig("api-rules", "api", 5))
	x.waitLimit(t, "api", 5)
}

// A RateLimitConfig means what the YAML of the same fields means: every
// field of the resource reaches the rule, and a refusal names the resource.
func TestXDSResourceIsReadAsTheYAML(t *testing.T) {
	md, err := structpb.NewStruct(map[string]any{"team": "a", "n": 2.5, "on": true, "tags": []any{"x", 1.0}, "sub": map[string]any{"k": "v"}})
	require.NoError(t, err)
	conf := &rlsconf.RateLimitConfig{Name: "res", Domain: "d", Descriptors: []*rlsconf.RateLimitDescriptor{
		{Key: "k", Value: "v", ShadowMode: true, QuotaMode: true, DetailedMetric: true, Metadata: md,
			RateLimit: &rlsconf.RateLimitPolicy{Unit: rlsconf.RateLimitUnit_WEEK, RequestsPerUnit: 7, Name: "a", Replaces: []*rlsconf.RateLimitReplace{{Name: "b"}}}},
		{Key: "open", RateLimit: &rlsconf.RateLimitPolicy{Unlimited: true}},
		{Key: "outer", Descriptors: []*rlsconf.RateLimitDescriptor{{Key: "inner", RateLimit: &rlsconf.RateLimitPolicy{Unit: rlsconf.RateLimitUnit_YEAR, RequestsPerUnit: 1}}}},
	}}
	res, err := anypb.New(conf)
	require.NoError(t, err)
	files, err := xdsFiles([]*anypb.Any{res})
	require.NoError(t, err)
	fromXDS, err := Load(files, LoadOptions{})
	require.NoError(t, err)
	fromYAML := loadString(t, `domain: d
descriptors:
  - {key: k, value: v, shadow_mode: true, quota_mode: true, detailed_metric: true,
     metadata: {team: a, n: 2.5, "on": true, tags: [x, 1], sub: {k: v}},
     rate_limit: {unit: week, requests_per_unit: 7, name: a, replaces: [{name: b}]}}
  - {key: open, rate_limit: {unlimited: true}}
  - key: outer
    descriptors: [{key: inner, rate_limit: {unit: year, requests_per_unit: 1}}]
`)
	for _, entries := range [][]Entry{{{"k", "v"}}, {{"open", "x"}}, {{"outer", "o"}, {"inner", "i"}}} {
		x, y := fromXDS.Lookup("d", entries), fromYAML.Lookup("d", entries)
		require.NotNil(t, x.Rule, "%v", entries)
		require.True(t, proto.Equal(y.Rule.Metadata, x.Rule.Metadata), "%v: metadata %v, want %v", entries, x.Rule.Metadata, y.Rule.Metadata)
		xr, yr := *x.Rule, *y.Rule
		xr.Where, yr.Where, xr.Metadata, yr.Metadata = "", "", nil, nil
		require.Equal(t, yr, xr, "%v", entries)
	}

	conf.Descriptors[1].RateLimit.Unit = rlsconf.RateLimitUnit_SECOND
	res, err = anypb.New(conf)
	require.NoError(t, err)
	files, err = xdsFiles([]*anypb.Any{res})
	require.NoError(t, err)
	_, err = Load(files, LoadOptions{})
	require.EqualError(t, err, "res: should not specify rate limit unit when unlimited")
}
