package clusteradmin

// When a reshard tries a slot's migration again: the errors that may pass
// (a failover under way, a destination restarting) against the ones that
// will not.

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// migrateAttempts is how many times a slot's migration is tried when it
// gives up, each time leaving the slot where it was, in a cluster without
// Sentinels (with them, o.RetryFor bounds the tries).
const migrateAttempts = 3

// isReply reports whether err is a node's error reply, not a failure to
// reach it.
func isReply(err error) bool {
	var re ReplyError
	return errors.As(err, &re)
}

// permanent is an error a try again cannot mend.
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// mayRetry reports whether a slot's move that failed with err at attempt
// is tried again. Without Sentinels no failover will come: only a
// migration that gave up is, a few times.
func (r *resharder) mayRetry(err error, slot, attempt int, deadline time.Time) bool {
	if !r.sentinels {
		var re ReplyError
		return attempt < migrateAttempts && errors.As(err, &re) && strings.HasPrefix(string(re), "ERR slot "+strconv.Itoa(slot)+" to ")
	}
	return retryable(err, slot, attempt) && time.Now().Before(deadline)
}

// retryable reports whether a slot's move that failed with err may be
// tried again: a migration that gave up (the slot stays on the source), a
// node that did not answer or answers that it no longer is the slot's
// owner or a master (a failover), a node that waits for its Sentinels. A
// slot already moving is, after a first try failed: a failover ends the
// moves it breaks, a moment later.
func retryable(err error, slot, attempt int) bool {
	var re ReplyError
	if errors.As(err, &permanent{}) {
		return false
	}
	if !errors.As(err, &re) {
		return true
	}
	msg, sl := string(re), strconv.Itoa(slot)
	switch {
	case strings.HasPrefix(msg, "ERR slot "+sl+" to "),
		strings.HasPrefix(msg, "ERR slot "+sl+" is not served by this node"),
		strings.HasPrefix(msg, "ERR Unknown node "),
		strings.HasPrefix(msg, "CLUSTERDOWN "),
		strings.HasPrefix(msg, "LOADING "),
		strings.HasPrefix(msg, "TRYAGAIN "):
		return true
	case strings.HasPrefix(msg, "ERR slot "+sl+" is already moving"):
		return attempt > 1
	}
	return false
}
