package server

import (
	"time"
)

// CLIENT TRACKING and its companions (CACHING, GETREDIR, TRACKINGINFO):
// how a client asks to be told of the keys it caches (tracking).

// clientTracking describes CLIENT TRACKING. A connection that turns it on
// leaves its event loop once it is answered (tracking.enable): the outbox
// that carries its invalidations writes through the netpoller.
func clientTracking() *command {
	return clientSubcommand("tracking", -3, "6.0.0", "Controls server-assisted client-side caching for the connection.",
		"O(1). Some options may introduce additional complexity.", cmdClientTracking)
}

// CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX prefix ...] [BCAST] [OPTIN]
// [OPTOUT] [NOLOOP]
//
// As Redis's clientCommand: the options are parsed first, each error
// answered in Redis's order, then checked against each other and against
// the mode the client already tracks in. OFF ignores the options it was
// given once they parse. Tracking is allowed under RESP2 without a
// redirection, as in Redis, though nothing can then be sent.
func cmdClientTracking(c *client, args [][]byte, _ time.Time) {
	m := &trackingMode{}
	redirected := false
	for j := 3; j < len(args); j++ {
		more := j+1 < len(args)
		switch opt := args[j]; {
		case equalFold(opt, "redirect") && more:
			j++
			if redirected && m.redirect != 0 {
				c.writeError(errTrackingOneRedirect)
				return
			}
			id, ok := parseInt(args[j])
			if !ok {
				c.writeError(errNotInteger)
				return
			}
			if c.srv.tracking.lookup(id) == nil {
				c.writeError(errTrackingNoRedirect)
				return
			}
			m.redirect, redirected = id, true
		case equalFold(opt, "bcast"):
			m.bcast = true
		case equalFold(opt, "optin"):
			m.optin = true
		case equalFold(opt, "optout"):
			m.optout = true
		case equalFold(opt, "noloop"):
			m.noloop = true
		case equalFold(opt, "prefix") && more:
			j++
			m.prefixes = append(m.prefixes, string(args[j]))
		default:
			c.writeError(errSyntax)
			return
		}
	}
	switch {
	case equalFold(args[2], "on"):
		if e := c.checkTracking(m); !e.none() {
			c.writeError(e)
			return
		}
		c.srv.tracking.enable(c, m)
	case equalFold(args[2], "off"):
		c.srv.tracking.disable(c)
	default:
		c.writeError(errSyntax)
		return
	}
	c.writeOK()
}

// checkTracking checks CLIENT TRACKING ON's options m against each other and
// against the client's mode, in Redis's order.
func (c *client) checkTracking(m *trackingMode) replyError {
	old := c.tracking.mode.Load()
	switch {
	case !m.bcast && len(m.prefixes) > 0:
		return errTrackingPrefixNoBcast
	case old != nil && old.bcast != m.bcast:
		return errTrackingSwitchBcast
	case m.bcast && (m.optin || m.optout):
		return errTrackingOptBcast
	case m.optin && m.optout:
		return errTrackingOptinOptout
	case old != nil && ((m.optin && old.optout) || (m.optout && old.optin)):
		return errTrackingSwitchOpt
	}
	if !m.bcast {
		return replyError{}
	}
	for i, p := range m.prefixes {
		if old != nil {
			for _, q := range old.prefixes {
				if prefixesOverlap(q, p) {
					return errPrefixOverlap(p, q, true)
				}
			}
		}
		for _, q := range m.prefixes[i+1:] {
			if prefixesOverlap(p, q) {
				return errPrefixOverlap(p, q, false)
			}
		}
	}
	return replyError{}
}

// prefixesOverlap reports whether one of a and b is a prefix of the other:
// a key could match both, and be invalidated twice.
func prefixesOverlap(a, b string) bool {
	n := min(len(a), len(b))
	return a[:n] == b[:n]
}

// CLIENT CACHING YES|NO
//
// In OPTIN mode YES tracks the keys of the next command; in OPTOUT mode NO
// does not (beforeCommand).
func cmdClientCaching(c *client, args [][]byte, _ time.Time) {
	m := c.tracking.mode.Load()
	switch {
	case m == nil:
		c.writeError(errCachingNotTracking)
	case equalFold(args[2], "yes") && !m.optin:
		c.writeError(errCachingYesNotOptin)
	case equalFold(args[2], "no") && !m.optout:
		c.writeError(errCachingNoNotOptout)
	case equalFold(args[2], "yes"), equalFold(args[2], "no"):
		c.tracking.caching = true
		c.writeOK()
	default:
		c.writeError(errSyntax)
	}
}

// CLIENT GETREDIR
func cmdClientGetredir(c *client, _ [][]byte, _ time.Time) { c.writeInt(c.redirect()) }

// CLIENT TRACKINGINFO
//
// A map of flags (a set: on or off, bcast, optin with caching-yes, optout
// with caching-no, noloop, broken_redirect), redirect and prefixes.
func cmdClientTrackinginfo(c *client, _ [][]byte, _ time.Time) {
	m := c.tracking.mode.Load()
	flags := []string{"off"}
	if m != nil {
		flags[0] = "on"
		if m.bcast {
			flags = append(flags, "bcast")
		}
		if m.optin {
			flags = append(flags, "optin")
			if c.tracking.caching {
				flags = append(flags, "caching-yes")
			}
		}
		if m.optout {
			flags = append(flags, "optout")
			if c.tracking.caching {
				flags = append(flags, "caching-no")
			}
		}
		if m.noloop {
			flags = append(flags, "noloop")
		}
		if c.tracking.brokenRedirect.Load() {
			flags = append(flags, "broken_redirect")
		}
	}
	c.writeMap(3)
	c.writeBulkString("flags")
	c.writeSet(len(flags))
	for _, f := range flags {
		c.writeBulkString(f)
	}
	c.writeBulkString("redirect")
	c.writeInt(c.redirect())
	c.writeBulkString("prefixes")
	var prefixes []string
	if m != nil {
		prefixes = m.prefixes
	}
	c.writeArray(len(prefixes))
	for _, p := range prefixes {
		c.writeBulkString(p)
	}
}
