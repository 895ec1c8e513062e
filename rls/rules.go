package rls

import (
	"sort"

	"google.golang.org/protobuf/types/known/structpb"
)

// The rules as they are decided by: domains of descriptors (Rules, Rule,
// the trie of node and wildcard), each limit's unit and algorithm.

// Unit is a limit's unit of time, numbered as Envoy's
// RateLimitResponse.RateLimit.Unit.
type Unit int32

// Units.
const (
	UnitUnknown Unit = 0
	Second      Unit = 1
	Minute      Unit = 2
	Hour        Unit = 3
	Day         Unit = 4
	Month       Unit = 5 // 30 days, as the reference's
	Year        Unit = 6 // 365 days
	Week        Unit = 7
)

var unitSeconds = map[Unit]int64{Second: 1, Minute: 60, Hour: 3600, Day: 86400, Week: 7 * 86400, Month: 30 * 86400, Year: 365 * 86400}

var unitNames = map[string]Unit{"second": Second, "minute": Minute, "hour": Hour, "day": Day, "week": Week, "month": Month, "year": Year}

// Seconds is the unit's length, 0 for UnitUnknown or a number no unit has.
func (u Unit) Seconds() int64 { return unitSeconds[u] }

// String is the unit's name in lower case, as the configuration spells it.
func (u Unit) String() string {
	for name, v := range unitNames {
		if v == u {
			return name
		}
	}
	return "unknown"
}

// Algorithm is how a limit decides.
type Algorithm uint8

// Algorithms.
const (
	// FixedWindow is the reference's: windows of one unit aligned to the
	// epoch, every hit counted (CL.COUNT).
	FixedWindow Algorithm = iota
	// GCRA is CL.THROTTLE's: burst+1 at once, refilled at
	// requests_per_unit a unit.
	GCRA
	// SlidingWindow is CL.WINDOW's: at most requests_per_unit in any unit,
	// an exact log (precision 0) or precision sub-window counters.
	SlidingWindow
)

var algorithmNames = map[string]Algorithm{"fixed_window": FixedWindow, "gcra": GCRA, "sliding_window": SlidingWindow}

func (a Algorithm) String() string {
	switch a {
	case GCRA:
		return "gcra"
	case SlidingWindow:
		return "sliding_window"
	}
	return "fixed_window"
}

// Limit is one limit of a rule: a rate_limit block.
type Limit struct {
	// Name is the limit's name (the reference's rate_limit.name), which
	// another matched limit's Replaces removes.
	Name            string
	Replaces        []string
	RequestsPerUnit uint32
	Unit            Unit
	Algorithm       Algorithm
	// Burst is GCRA's max_burst: burst+1 requests at once. The default is
	// RequestsPerUnit-1, a bucket of one unit's requests.
	Burst int64
	// Precision is the sliding window's sub-windows; 0, the default, is
	// the exact log.
	Precision int64
}

// Rule is what a descriptor of the configuration says: unlimited, or one
// or more limits (the strictest answers), with its modes.
type Rule struct {
	Unlimited      bool
	Limits         []Limit
	ShadowMode     bool
	QuotaMode      bool
	DetailedMetric bool
	// StatsKey names the rule in metrics, as the reference names its stats:
	// the domain and each level's key_value, dot-separated
	// ("rl.database_users").
	StatsKey string
	// Where is the file and line the rule came from (the xDS resource
	// alone).
	Where string
	// Metadata is the descriptor's metadata, which answers with
	// RESPONSE_DYNAMIC_METADATA carry; nil for none.
	Metadata *structpb.Struct
}

// node is one level of a domain's tree.
type node struct {
	children  map[string]*node // by "key_value", or "key" for a rule without a value
	wildcards []wildcard       // the children whose value has a *, in file order
	rule      *Rule
	// shareThreshold: requests matched by this wildcard share one counter,
	// keyed by the pattern instead of the value.
	shareThreshold bool
	// valueToMetric: the rule's stats key names this level by the
	// request's value, where it matched by its key alone or a wildcard.
	valueToMetric bool
}

// wildcard is a "key_value" with a * in it, split at its *s.
type wildcard struct {
	key   string
	parts []string
}

// Rules are the loaded configuration. They never change once loaded and are
// safe for concurrent use.
type Rules struct {
	domains map[string]*node
	// Files are the files loaded, in load order.
	Files []string
}

// Domains lists the domains the rules know, sorted.
func (r *Rules) Domains() []string {
	if r == nil {
		return nil
	}
	var ds []string
	for d := range r.domains {
		ds = append(ds, d)
	}
	sort.Strings(ds)
	return ds
}
