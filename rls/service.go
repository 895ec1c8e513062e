// Package rls serves Envoy's rate limit service
// (envoy.service.ratelimit.v3.RateLimitService) over redcell's keyspace, with
// envoyproxy/ratelimit's configuration and answers: its fixed windows
// decided by CL.COUNT, and per rule GCRA (CL.THROTTLE) and sliding windows
// (CL.WINDOW).
//
// The Rules are loaded from YAML (Load) and swapped whole on reload (Watcher);
// a request's descriptors are matched against them (Rules.Lookup), each limit
// becomes a Call on a key (counterKey), and a Decider runs the calls on the
// store here (Local) or on the node owning each key (Cluster).
package rls

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/redcell/redcell/admission"
	"github.com/redcell/redcell/gcra"
)

// Options are a Service's settings. The zero value is the reference's
// defaults.
type Options struct {
	// KeyPrefix begins every key the service keeps (the reference's
	// CACHE_KEY_PREFIX). The default is none.
	KeyPrefix string
	// ResponseHeaders adds RateLimit-Limit, RateLimit-Remaining and
	// RateLimit-Reset to every answer with a limit, chosen as the
	// reference's LIMIT_RESPONSE_HEADERS_ENABLED chooses them.
	ResponseHeaders bool
	// NearLimitRatio is the share of a limit past which hits count as near
	// it, in metrics (the reference's NEAR_LIMIT_RATIO). The default is 0.8.
	NearLimitRatio float64
	// LimitHeader, RemainingHeader and ResetHeader name the ResponseHeaders
	// (the reference's LIMIT_LIMIT_HEADER, LIMIT_REMAINING_HEADER,
	// LIMIT_RESET_HEADER). The defaults are RateLimit-Limit,
	// RateLimit-Remaining and RateLimit-Reset.
	LimitHeader, RemainingHeader, ResetHeader string
	// ShadowMode answers OK whenever the answer would be OVER_LIMIT, each
	// descriptor's status left as decided, and counts it (the reference's
	// global SHADOW_MODE).
	ShadowMode bool
	// QuotaMode decides every descriptor as a rule with quota_mode does:
	// the answer is OVER_LIMIT only when all of them are over (the
	// reference's global QUOTA_MODE).
	QuotaMode bool
	// DynamicMetadata adds the request's domain and descriptors, and the
	// metadata of the rules that passed, to every answer's
	// dynamic_metadata, as the reference's RESPONSE_DYNAMIC_METADATA.
	DynamicMetadata bool
	// StopIncrementWhenOverLimit spends none of a request's other limits
	// when one of them would go over (spareTheOthers), as the reference's
	// STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT.
	StopIncrementWhenOverLimit bool
}

// Service is the gRPC rate limit service. It is safe for concurrent use.
type Service struct {
	pb.UnimplementedRateLimitServiceServer
	rules   atomic.Pointer[Rules]
	rulesAt atomic.Int64 // unix nanoseconds of the last SetRules
	decider Decider
	now     func() time.Time
	opts    Options
	metrics *Metrics
}

// NewService returns a service deciding with d at the times now reads, with
// rules (nil: none yet, every request is answered UNAVAILABLE until
// SetRules). metrics may be nil.
func NewService(rules *Rules, d Decider, now func() time.Time, opts Options, metrics *Metrics) *Service {
	if opts.NearLimitRatio == 0 {
		opts.NearLimitRatio = 0.8
	}
	opts.LimitHeader = cmp.Or(opts.LimitHeader, "RateLimit-Limit")
	opts.RemainingHeader = cmp.Or(opts.RemainingHeader, "RateLimit-Remaining")
	opts.ResetHeader = cmp.Or(opts.ResetHeader, "RateLimit-Reset")
	s := &Service{decider: d, now: now, opts: opts, metrics: metrics}
	if rules != nil {
		s.rules.Store(rules)
	}
	return s
}

// Use makes the service decide with d at the times now reads, for the
// requests that follow: the daemon loads the rules before the store opens,
// and gives the service its store once it has one.
func (s *Service) Use(d Decider, now func() time.Time) {
	s.decider, s.now = d, now
}

// SetRules puts rules in force for the requests that follow.
func (s *Service) SetRules(r *Rules) {
	s.rules.Store(r)
	s.rulesAt.Store(time.Now().UnixNano())
}

// Rules returns the rules in force, nil before the first.
func (s *Service) Rules() *Rules { return s.rules.Load() }

// errNoRules answers a request that comes before any rules (from an xDS
// management server): UNAVAILABLE, so that Envoy's failure_mode_deny
// decides as for a service that cannot answer now, where the reference
// forced to start (FORCE_START_WITHOUT_INITIAL_CONFIG) answers UNKNOWN "no
// rate limit configuration loaded".
var errNoRules = status.Error(codes.Unavailable, "the rate limit service has no rules yet: it waits for its first configuration")

// RulesSince returns when the rules in force were put in force (the last
// good load), for the status page; zero before any.
func (s *Service) RulesSince() time.Time {
	if n := s.rulesAt.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// unlimitedRemaining is an unlimited descriptor's limit_remaining.
const unlimitedRemaining = math.MaxUint32

// descriptor is one descriptor of a request on its way through a decision.
type descriptor struct {
	rule      *Rule   // nil: no limit (or replaced, or unlimited)
	limits    []Limit // what it is decided by
	unlimited bool
	shadow    bool
	quota     bool
	statsKey  string
	metadata  *structpb.Struct // the rule's, for dynamic_metadata
	hits      int64
	calls     []Call // into the request's calls, one per limit
}

// ShouldRateLimit implements the service: it answers the request's
// descriptors as envoyproxy/ratelimit does, in order.
func (s *Service) ShouldRateLimit(ctx context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	start := time.Now()
	resp, err := s.shouldRateLimit(ctx, req)
	s.metrics.request(resp, err, time.Since(start))
	return resp, err
}

func (s *Service) shouldRateLimit(ctx context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	if req.GetDomain() == "" {
		return nil, status.Error(codes.Unknown, "rate limit domain must not be empty")
	}
	if len(req.GetDescriptors()) == 0 {
		return nil, status.Error(codes.Unknown, "rate limit descriptor list must not be empty")
	}
	rules := s.rules.Load()
	if rules == nil {
		return nil, errNoRules
	}
	ds := make([]descriptor, len(req.Descriptors))
	var replaced map[string]bool // the names replaced, made when one is
	entries := make([]Entry, 0, 8)
	for i, d := range req.Descriptors {
		x := &ds[i]
		x.hits = hitsOf(req, i)
		entries = entries[:0]
		for _, e := range d.GetEntries() {
			entries = append(entries, Entry{Key: e.GetKey(), Value: e.GetValue()})
		}
		var values []string
		if _, known := rules.domains[req.Domain]; known && d.GetLimit() != nil {
			// A limit override: the reference's, a fixed window on the
			// descriptor's counter at the override's unit, never in
			// shadow mode, named by the request's key_values.
			u := Unit(d.GetLimit().GetUnit())
			if u.Seconds() == 0 {
				return nil, status.Errorf(codes.InvalidArgument,
					"descriptor %d: the limit override's unit %d is not second, minute, hour, day, week, month or year", i, u)
			}
			x.limits = []Limit{{RequestsPerUnit: d.GetLimit().GetRequestsPerUnit(), Unit: u}}
			x.statsKey = overrideStatsKey(req.Domain, entries)
			x.rule = &Rule{}
			values = valuesOf(entries)
		} else {
			m := rules.Lookup(req.Domain, entries)
			if m.Rule == nil {
				continue
			}
			x.rule, x.statsKey, values, x.metadata = m.Rule, m.StatsKey, m.Values, m.Metadata
			x.shadow, x.quota = m.Rule.ShadowMode, m.Rule.QuotaMode
			x.unlimited = m.Rule.Unlimited
			x.limits = m.Rule.Limits
		}
		for _, lim := range x.limits {
			for _, r := range lim.Replaces {
				if replaced == nil {
					replaced = map[string]bool{}
				}
				replaced[r] = true
			}
		}
		if x.unlimited {
			continue
		}
		x.calls = make([]Call, len(x.limits))
		for j, lim := range x.limits {
			x.calls[j] = Call{Key: counterKey(s.opts.KeyPrefix, req.Domain, entries, values, lim), Limit: lim, Hits: x.hits}
		}
	}
	// Replaced limits decide nothing, as in the reference, where a replaced
	// descriptor's status is the one of no limit.
	calls := make([]Call, 0, len(ds))
	for i := range ds {
		x := &ds[i]
		kept := x.calls[:0]
		for _, c := range x.calls {
			if replaced == nil || c.Limit.Name == "" || !replaced[c.Limit.Name] {
				kept = append(kept, c)
			}
		}
		if len(kept) == 0 && len(x.calls) > 0 {
			// Replaced whole: the reference's descriptor with no limit,
			// no quota and no metadata.
			x.quota, x.metadata = false, nil
		}
		x.calls = kept
		calls = append(calls, kept...)
	}
	if len(calls) > 0 {
		if s.opts.StopIncrementWhenOverLimit {
			if err := s.spareTheOthers(ctx, calls); err != nil {
				return nil, decisionStatus(err)
			}
		}
		if err := s.decider.Decide(ctx, s.now(), calls); err != nil {
			return nil, decisionStatus(err)
		}
	}
	now := s.now()
	resp := &pb.RateLimitResponse{Statuses: make([]*pb.RateLimitResponse_DescriptorStatus, len(ds))}
	// The headers' limit, chosen as the reference's: the fewest remaining,
	// then the first descriptor over its limit (not in quota mode).
	var header outcome
	hasHeader := false
	minRemaining := uint32(math.MaxUint32)
	failed, quotaFailed, quotaTotal := 0, 0, 0
	rest := calls // each descriptor's calls, decided, in order
	for i := range ds {
		x := &ds[i]
		x.calls, rest = rest[:len(x.calls)], rest[len(x.calls):]
		st, best := s.status(x, now)
		if st.CurrentLimit != nil && st.LimitRemaining < minRemaining {
			header, hasHeader, minRemaining = best, true, st.LimitRemaining
		}
		if x.unlimited {
			resp.Statuses[i] = &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK, LimitRemaining: unlimitedRemaining}
			continue
		}
		resp.Statuses[i] = st
		quota := x.quota || s.opts.QuotaMode
		if st.Code == pb.RateLimitResponse_OVER_LIMIT {
			if quota {
				quotaFailed++
			} else {
				failed++
				header, hasHeader, minRemaining = best, true, 0
			}
		}
		if quota {
			quotaTotal++
		}
	}
	resp.OverallCode = pb.RateLimitResponse_OK
	if failed > 0 || (quotaTotal > 0 && quotaTotal == quotaFailed) {
		resp.OverallCode = pb.RateLimitResponse_OVER_LIMIT
	}
	if s.opts.ResponseHeaders && hasHeader {
		resp.ResponseHeadersToAdd = s.rateLimitHeaders(header)
	}
	if resp.OverallCode == pb.RateLimitResponse_OVER_LIMIT && s.opts.ShadowMode {
		resp.OverallCode = pb.RateLimitResponse_OK
		s.metrics.globalShadow()
	}
	if s.opts.DynamicMetadata {
		resp.DynamicMetadata = responseMetadata(req, ds, resp.Statuses)
	}
	return resp, nil
}

// decisionStatus is the gRPC status of a request whose decision failed. A
// refusal (the gate's, the store's memory limit, or a node's a key was
// forwarded to) is coded so that Envoy's failure_mode_deny applies as the
// operator means it, with Redis's error text as the message: a node that
// cannot take changes now (READONLY, NOREPLICAS, MISCONF, CLUSTERDOWN) is
// UNAVAILABLE, a key too long the request's fault (INVALID_ARGUMENT), the
// memory limit RESOURCE_EXHAUSTED. Any other failure is UNAVAILABLE.
func decisionStatus(err error) error {
	r, text := admission.Admitted, err.Error()
	var refused *RefusedError
	if errors.As(err, &refused) {
		r, text = refused.Refusal, refused.Text
	}
	switch r {
	case admission.KeyTooLong:
		return status.Error(codes.InvalidArgument, text)
	case admission.OOM:
		return status.Error(codes.ResourceExhausted, text)
	case admission.Admitted:
		return status.Errorf(codes.Unavailable, "rate limit decision failed: %v", err)
	}
	return status.Error(codes.Unavailable, text)
}

// hitsOf is descriptor i's hits: its own hits_addend when set (0 reads
// only), else the request's, where 0 means 1.
func hitsOf(req *pb.RateLimitRequest, i int) int64 {
	h := uint64(max(1, req.GetHitsAddend()))
	if ha := req.Descriptors[i].GetHitsAddend(); ha != nil {
		h = ha.GetValue()
	}
	return int64(min(h, MaxHits))
}

// spareTheOthers is the reference's STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT:
// the calls' keys are read first (0 hits), and if any call would go over
// its limit with its hits, every other call is decided with 0 hits, so
// that a request refused by one limit spends none of the others; the calls
// going over are counted as usual. As in the reference, the read and the
// decision are apart: a request between them can change what was read.
func (s *Service) spareTheOthers(ctx context.Context, calls []Call) error {
	reads := make([]Call, len(calls))
	for i, c := range calls {
		reads[i] = Call{Key: c.Key, Limit: c.Limit}
	}
	now := s.now()
	if err := s.decider.Decide(ctx, now, reads); err != nil {
		return err
	}
	over := make([]bool, len(calls))
	anyOver := false
	for i := range reads {
		r := &reads[i]
		if r.Limit.Algorithm == FixedWindow {
			// The count the hits would make, judged as an answer is.
			r.Count, r.Hits = r.Count+calls[i].Hits, calls[i].Hits
			over[i] = s.outcome(r, now).over
		} else {
			over[i] = calls[i].Hits > r.Result.Remaining
		}
		anyOver = anyOver || over[i]
	}
	if anyOver {
		for i := range calls {
			if !over[i] {
				calls[i].Hits = 0
			}
		}
	}
	return nil
}

// rateLimitHeaders are the RateLimit-* headers (as s.opts names them) of
// o, the limit chosen to answer with. A fixed window's are the reference's: its
// requests_per_unit, what remains of it, the window's end. GCRA's and the
// sliding window's announce what can pass at once (burst+1, the window's
// limit), so that remaining never exceeds the limit announced (a burst of
// 20 at 10 a second is 21, not 10 with 20 remaining); over the limit
// nothing remains and the reset is when the next request of as many hits
// would pass (when it never could, more hits than the limit, when the whole
// limit is back); allowed, the reset is when the whole limit is back (the
// IETF draft's reset of the quota).
func (s *Service) rateLimitHeaders(o outcome) []*core.HeaderValue {
	limit, remaining, reset := uint64(o.limit.RequestsPerUnit), uint64(o.remaining), o.reset
	if o.limit.Algorithm != FixedWindow {
		limit, remaining = o.threshold, min(remaining, o.threshold)
		if o.over {
			remaining = 0
			if o.retry >= 0 {
				reset = o.retry
			}
		}
	}
	return []*core.HeaderValue{
		{Key: s.opts.LimitHeader, Value: strconv.FormatUint(limit, 10)},
		{Key: s.opts.RemainingHeader, Value: strconv.FormatUint(remaining, 10)},
		{Key: s.opts.ResetHeader, Value: strconv.FormatInt(ceilSeconds(reset), 10)},
	}
}

// status is a descriptor's answer from its calls' results, the strictest
// of its limits answering (best), and counts it in the metrics.
func (s *Service) status(x *descriptor, now time.Time) (st *pb.RateLimitResponse_DescriptorStatus, best outcome) {
	if len(x.calls) == 0 {
		return &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK}, best
	}
	stats := s.metrics.rule(x.statsKey)
	for j := range x.calls {
		o := s.outcome(&x.calls[j], now)
		stats.count(o, x.hits, x.shadow, s.opts.NearLimitRatio)
		if j == 0 || o.stricter(best) {
			best = o
		}
	}
	st = &pb.RateLimitResponse_DescriptorStatus{
		Code:               pb.RateLimitResponse_OK,
		CurrentLimit:       &pb.RateLimitResponse_RateLimit{Name: best.limit.Name, RequestsPerUnit: best.limit.RequestsPerUnit, Unit: pb.RateLimitResponse_RateLimit_Unit(best.limit.Unit)},
		LimitRemaining:     best.remaining,
		DurationUntilReset: durationpb.New(best.reset),
	}
	if best.over && !x.shadow {
		st.Code = pb.RateLimitResponse_OVER_LIMIT
	}
	return st, best
}

// outcome is one limit's answer.
type outcome struct {
	limit     Limit
	over      bool
	remaining uint32
	reset     time.Duration
	// retry is, over a GCRA or sliding-window limit, when the request
	// would pass; negative when it never could.
	retry time.Duration
	// before and after are the counts before and after the hits, and
	// threshold the limit they compare with, for the metrics.
	before, after, threshold uint64
}

// stricter reports whether o binds more than p: over the limit first, then
// fewer remaining, then the longer wait.
func (o outcome) stricter(p outcome) bool {
	switch {
	case o.over != p.over:
		return o.over
	case o.remaining != p.remaining:
		return o.remaining < p.remaining
	}
	return o.reset > p.reset
}

func (s *Service) outcome(c *Call, now time.Time) outcome {
	o := outcome{limit: c.Limit}
	switch c.Limit.Algorithm {
	case GCRA, SlidingWindow:
		r := c.Result
		o.over = r.Limited
		o.remaining = uint32(min(max(r.Remaining, 0), math.MaxUint32))
		// Whole seconds, as the engines' commands reply them, so that an
		// answer decided here and one forwarded to another node read
		// alike.
		o.reset = time.Duration(max(gcra.Seconds(r.ResetAfter), 0)) * time.Second
		o.retry = time.Duration(gcra.Seconds(r.RetryAfter)) * time.Second
		o.threshold = uint64(max(r.Limit, 0))
		o.after = o.threshold - uint64(o.remaining)
		o.before = o.after
		if !r.Limited {
			o.before = o.after - min(o.after, uint64(c.Hits))
		}
	default:
		// The reference: over when the count after the hits passes
		// requests_per_unit; the reset is the unit's end, in whole
		// seconds of the wall clock.
		o.threshold = uint64(c.Limit.RequestsPerUnit)
		o.after = uint64(c.Count)
		o.before = o.after - min(o.after, uint64(c.Hits))
		o.over = o.after > o.threshold
		if !o.over {
			o.remaining = uint32(o.threshold - o.after)
		}
		unit := c.Limit.Unit.Seconds()
		o.reset = time.Duration(unit-now.Unix()%unit) * time.Second
	}
	return o
}

// ceilSeconds is d in whole seconds, rounded up.
func ceilSeconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}

// overrideStatsKey names a limit override in metrics as the reference does:
// the domain, then each key_value (key alone for an empty value).
func overrideStatsKey(domain string, entries []Entry) string {
	k := ""
	for _, e := range entries {
		if k != "" {
			k += "."
		}
		k += e.Key
		if e.Value != "" {
			k += "_" + e.Value
		}
	}
	return domain + "." + k
}

func valuesOf(entries []Entry) []string {
	v := make([]string, len(entries))
	for i, e := range entries {
		v[i] = e.Value
	}
	return v
}

// String describes a limit for logs: "10/minute gcra burst 20".
func (lim Limit) String() string {
	s := fmt.Sprintf("%d/%s", lim.RequestsPerUnit, lim.Unit)
	switch lim.Algorithm {
	case GCRA:
		s += fmt.Sprintf(" gcra burst %d", lim.Burst)
	case SlidingWindow:
		s += " sliding window"
		if lim.Precision > 0 {
			s += fmt.Sprintf(" precision %d", lim.Precision)
		}
	}
	return s
}
