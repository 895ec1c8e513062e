package rls

// counterKey is the key that holds a limit's state for a descriptor:
//
//	<prefix><domain>_<key1>_<value1>_..._<keyN>_<valueN>_<unit>[_gcra|_sliding]
//
// as the reference's <prefix><domain>_<key1>_<value1>_..._<window start>,
// with the unit's name where the reference has the window's start: one key
// a descriptor and unit holds the current window (its state knows which),
// so DEL resets it and nothing is left behind per window. A share_threshold
// wildcard's levels use its pattern as the value (values), so that every
// value it matches shares the counter. A request-side override at the
// rule's unit shares the rule's key, as it shares the reference's.
func counterKey(prefix, domain string, entries []Entry, values []string, lim Limit) []byte {
	n := len(prefix) + len(domain) + 16
	for i, e := range entries {
		n += len(e.Key) + len(values[i]) + 2
	}
	b := make([]byte, 0, n)
	b = append(b, prefix...)
	b = append(b, domain...)
	b = append(b, '_')
	for i, e := range entries {
		b = append(b, e.Key...)
		b = append(b, '_')
		b = append(b, values[i]...)
		b = append(b, '_')
	}
	b = append(b, lim.Unit.String()...)
	switch lim.Algorithm {
	case GCRA:
		b = append(b, "_gcra"...)
	case SlidingWindow:
		b = append(b, "_sliding"...)
	}
	return b
}
