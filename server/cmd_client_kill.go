package server

import (
	"math"
	"time"
)

// CLIENT KILL, its filters, and the client types they name.

// CLIENT KILL ip:port
// CLIENT KILL [ID id] [TYPE type] [USER name] [ADDR ip:port] [LADDR ip:port]
// [SKIPME yes|no] [MAXAGE seconds] ...
//
// The old form answers OK, or No such client, and may kill the caller; the
// new form answers how many connections it killed and, unless SKIPME no,
// spares the caller. Another connection is killed by closing its socket
// (client.kill); the caller, after its reply.
func cmdClientKill(c *client, args [][]byte, now time.Time) {
	f := killFilter{skipMe: true}
	oldForm := len(args) == 3
	if oldForm {
		f.addr, f.skipMe = args[2], false
	} else if e := f.parse(args[2:], c.srv.users); !e.none() {
		c.writeError(e)
		return
	}
	killed, self := int64(0), false
	for _, other := range c.srv.connectedClients() {
		if !f.matches(other, now) {
			continue
		}
		switch {
		case other == c && f.skipMe:
		case other == c:
			self = true
			killed++
		case other.kill():
			killed++
		}
	}
	switch {
	case !oldForm:
		c.writeInt(killed)
	case killed == 0:
		c.writeError(errNoSuchClient)
	default:
		c.writeOK()
	}
	if self {
		_ = c.conn.Close() // its replies so far, then the end (engine.NeedClose)
	}
}

// killFilter is CLIENT KILL's filters: a client must pass all of them.
type killFilter struct {
	id     int64  // 0: any
	addr   []byte // nil: any
	laddr  []byte
	user   []byte        // nil: any
	kind   clientType    // TYPE; typeAny: any
	maxAge time.Duration // 0: any
	skipMe bool
}

// parse reads the new form's filters, as Redis checks them: in order, the
// first bad one reported. A USER must be one of users.
func (f *killFilter) parse(opts [][]byte, users *users) replyError {
	for i := 0; i < len(opts); i += 2 {
		if i+1 >= len(opts) {
			return errSyntax
		}
		opt, val := opts[i], opts[i+1]
		switch {
		case equalFold(opt, "id"):
			id, ok := parseInt(val)
			if !ok || id < 1 {
				return errKillClientID
			}
			f.id = id
		case equalFold(opt, "maxage"):
			age, ok := parseInt(val)
			if !ok {
				return errKillMaxAgeInteger
			}
			if age <= 0 {
				return errKillMaxAge
			}
			f.maxAge = time.Duration(min(age, int64(math.MaxInt64/time.Second))) * time.Second
		case equalFold(opt, "type"):
			kind, ok := parseClientType(val)
			if !ok {
				return errUnknownClientType(val)
			}
			f.kind = kind
		case equalFold(opt, "addr"):
			f.addr = val
		case equalFold(opt, "laddr"):
			f.laddr = val
		case equalFold(opt, "user"):
			if !users.exists(string(val)) {
				return errNoSuchUser(val)
			}
			f.user = val
		case equalFold(opt, "skipme"):
			switch {
			case equalFold(val, "yes"):
				f.skipMe = true
			case equalFold(val, "no"):
				f.skipMe = false
			default:
				return errSyntax
			}
		default:
			return errSyntax
		}
	}
	return replyError{}
}

func (f *killFilter) matches(c *client, now time.Time) bool {
	switch {
	case f.kind != typeAny && !c.isType(f.kind):
		return false
	case f.id != 0 && c.id != f.id:
		return false
	case f.addr != nil && string(f.addr) != c.ident.addr:
		return false
	case f.laddr != nil && string(f.laddr) != c.ident.laddr:
		return false
	case f.user != nil && string(f.user) != c.userName():
		return false
	case f.maxAge != 0 && now.Sub(c.ident.created).Truncate(time.Second) < f.maxAge:
		return false
	}
	return true
}

// clientType is a client's type, as CLIENT LIST and CLIENT KILL's TYPE
// select it: Redis's, where a monitor is a normal client and one with a
// subscription a pubsub client.
type clientType uint8

const (
	typeAny     clientType = iota
	typeNormal             // neither of the others
	typePubsub             // with a subscription (client.subscribed)
	typeReplica            // replica or slave: a replica's link, after PSYNC
	typeMaster             // master: redcell's link to its master is no client
)

// parseClientType reads a TYPE's value, case-insensitively.
func parseClientType(name []byte) (clientType, bool) {
	switch {
	case equalFold(name, "normal"):
		return typeNormal, true
	case equalFold(name, "pubsub"):
		return typePubsub, true
	case equalFold(name, "replica"), equalFold(name, "slave"):
		return typeReplica, true
	case equalFold(name, "master"):
		return typeMaster, true
	}
	return typeAny, false
}

// isType reports whether the client is of type t, from any goroutine.
func (c *client) isType(t clientType) bool {
	switch t {
	case typeNormal:
		return !c.subscribed() && !c.repl.linked.Load()
	case typePubsub:
		return c.subscribed()
	case typeReplica:
		return c.repl.linked.Load()
	case typeMaster:
		return false
	}
	return true
}
