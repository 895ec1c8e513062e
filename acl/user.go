package acl

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"slices"
	"strings"
)

// User is one ACL user: whether it is on, its passwords (SHA-256 digests,
// never the passwords themselves), and its selectors, the root one first.
// A User is immutable once it is in force: a change makes a new one
// (With), which the server puts in its place, so that a connection may
// hold and read its user without a lock.
type User struct {
	name         string
	cmds         *Commands
	enabled      bool
	nopass       bool
	skipSanitize bool // skip-sanitize-payload; Redis's default is sanitize-payload
	passwords    []string
	selectors    []*selector
	unrestricted bool
}

// NewUser is a user as ACL SETUSER creates one: off, without a password,
// allowed no command, key or channel.
func NewUser(cmds *Commands, name string) *User {
	return &User{name: name, cmds: cmds, selectors: []*selector{newSelector(cmds)}}
}

// DefaultUser is the default user as Redis makes it, on and allowed every
// command, key and channel, with password as its one password (Redis's
// requirepass), or nopass for "".
func DefaultUser(cmds *Commands, password string) *User {
	u := NewUser(cmds, "default")
	ops := []string{"+@all", "~*", "&*", "on", "nopass"}
	if password != "" {
		ops[4] = ">" + password
	}
	for _, op := range ops {
		if err := u.apply(op); err != nil {
			panic(err) // the rules above are valid
		}
	}
	u.unrestricted = u.computeUnrestricted()
	return u
}

// Name is the user's name.
func (u *User) Name() string { return u.name }

// Enabled reports whether the user is on: whether one may authenticate as
// it.
func (u *User) Enabled() bool { return u.enabled }

// NoPass reports whether any password opens the user (nopass).
func (u *User) NoPass() bool { return u.nopass }

// Unrestricted reports whether the user may run every command on every
// key and channel: one of its selectors allows all (the default user's
// +@all ~* &*). The server checks nothing further for such a user.
func (u *User) Unrestricted() bool { return u.unrestricted }

func (u *User) computeUnrestricted() bool {
	return slices.ContainsFunc(u.selectors, (*selector).unrestricted)
}

// HashPassword is a password as the user keeps it, and as #hash rules
// and ACL GETUSER show it: its SHA-256 digest in lower-case hex.
func HashPassword(password []byte) string {
	sum := sha256.Sum256(password)
	return hex.EncodeToString(sum[:])
}

// CheckPassword reports whether password opens the user: it is on, and
// nopass or the password's digest is one of the user's. The digests are
// compared in constant time, so neither a password nor its length leaks
// through timing.
func (u *User) CheckPassword(password []byte) bool {
	if !u.enabled {
		return false
	}
	if u.nopass {
		return true
	}
	sum := sha256.Sum256(password)
	var got [64]byte
	hex.Encode(got[:], sum[:])
	ok := 0
	for _, p := range u.passwords {
		ok |= subtle.ConstantTimeCompare(got[:], []byte(p))
	}
	return ok == 1
}

// clone copies the user, for a change (With).
func (u *User) clone() *User {
	c := *u
	c.passwords = slices.Clone(u.passwords)
	c.selectors = make([]*selector, len(u.selectors))
	for i, s := range u.selectors {
		c.selectors[i] = s.clone()
	}
	return &c
}

// Renamed returns a copy of u named name.
func (u *User) Renamed(name string) *User {
	c := u.clone()
	c.name = name
	return c
}

// RuleError is a rule that could not be applied, and why (one of this
// package's errors).
type RuleError struct {
	Op  string
	Err error
}

func (e *RuleError) Error() string { return "acl: rule '" + e.Op + "': " + e.Err.Error() }
func (e *RuleError) Unwrap() error { return e.Err }

// With returns a copy of u with the rules ops applied in order, as ACL
// SETUSER applies them: all or none. A selector's rules may come as one
// argument, "(~k* +get)", or spread over several, "(~k*" "+get)", as Redis
// takes them. The error is a *RuleError.
func (u *User) With(ops []string) (*User, error) {
	merged, err := MergeSelectors(ops)
	if err != nil {
		return nil, err
	}
	c := u.clone()
	for _, op := range merged {
		if err := c.apply(op); err != nil {
			return nil, &RuleError{Op: op, Err: err}
		}
	}
	c.unrestricted = c.computeUnrestricted()
	return c, nil
}

// MergeSelectors joins a selector's rules spread over several arguments
// ("(~k*", "+get)") into one ("(~k* +get)"), as Redis's
// ACLMergeSelectorArguments. A '(' without its ')' is a *RuleError naming
// the argument that opened it.
func MergeSelectors(ops []string) ([]string, error) {
	out := make([]string, 0, len(ops))
	open := -1
	var sel strings.Builder
	for i, op := range ops {
		if open < 0 && strings.HasPrefix(op, "(") && !strings.HasSuffix(op, ")") {
			open = i
			sel.Reset()
			sel.WriteString(op)
			continue
		}
		if open >= 0 {
			sel.WriteByte(' ')
			sel.WriteString(op)
			if strings.HasSuffix(op, ")") {
				open = -1
				out = append(out, sel.String())
			}
			continue
		}
		out = append(out, op)
	}
	if open >= 0 {
		return nil, &RuleError{Op: ops[open], Err: ErrUnmatchedParen}
	}
	return out, nil
}

// apply is one rule on u, in place: Redis's ACLSetUser.
func (u *User) apply(op string) error {
	switch {
	case op == "":
		return nil
	case strings.EqualFold(op, "on"):
		u.enabled = true
	case strings.EqualFold(op, "off"):
		u.enabled = false
	case strings.EqualFold(op, "skip-sanitize-payload"):
		u.skipSanitize = true
	case strings.EqualFold(op, "sanitize-payload"):
		u.skipSanitize = false
	case strings.EqualFold(op, "nopass"):
		u.nopass, u.passwords = true, nil
	case strings.EqualFold(op, "resetpass"):
		u.nopass, u.passwords = false, nil
	case op[0] == '>' || op[0] == '#':
		h := op[1:]
		if op[0] == '>' {
			h = HashPassword([]byte(op[1:]))
		} else if !validHash(h) {
			return ErrBadHash
		}
		if !slices.Contains(u.passwords, h) {
			u.passwords = append(u.passwords, h)
		}
		u.nopass = false
	case op[0] == '<' || op[0] == '!':
		h := op[1:]
		if op[0] == '<' {
			h = HashPassword([]byte(op[1:]))
		} else if !validHash(h) {
			return ErrBadHash
		}
		i := slices.Index(u.passwords, h)
		if i < 0 {
			return ErrNoSuchPassword
		}
		u.passwords = slices.Delete(u.passwords, i, i+1)
	case op[0] == '(' && op[len(op)-1] == ')':
		s := newSelector(u.cmds)
		for _, sop := range strings.Fields(op[1 : len(op)-1]) {
			if err := s.set(u.cmds, sop); err != nil {
				return err
			}
		}
		u.selectors = append(u.selectors, s)
	case strings.EqualFold(op, "clearselectors"):
		u.selectors = u.selectors[:1]
	case strings.EqualFold(op, "reset"):
		for _, r := range []string{"resetpass", "resetkeys", "resetchannels", "off", "sanitize-payload", "clearselectors", "-@all"} {
			if err := u.apply(r); err != nil {
				return err
			}
		}
	default:
		return u.selectors[0].set(u.cmds, op)
	}
	return nil
}

// validHash reports whether h is a password's digest as Redis writes it:
// 64 lower-case hex digits.
func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ValidName reports whether name may name a user: Redis refuses spaces
// and NULs.
func ValidName(name string) bool { return !hasSpace(name) }

// Flags are the user's flags as ACL GETUSER lists them, in Redis's order:
// on or off, nopass, then skip-sanitize-payload or sanitize-payload.
func (u *User) Flags() []string {
	f := []string{"off"}
	if u.enabled {
		f[0] = "on"
	}
	if u.nopass {
		f = append(f, "nopass")
	}
	if u.skipSanitize {
		return append(f, "skip-sanitize-payload")
	}
	return append(f, "sanitize-payload")
}

// Passwords are the user's password digests, in the order they were added.
func (u *User) Passwords() []string { return slices.Clone(u.passwords) }

// SelectorRules is one selector as ACL GETUSER shows it.
type SelectorRules struct {
	Commands, Keys, Channels string
}

// Selectors are the user's selectors as ACL GETUSER shows them, the root
// one first.
func (u *User) Selectors() []SelectorRules {
	out := make([]SelectorRules, len(u.selectors))
	for i, s := range u.selectors {
		out[i] = SelectorRules{Commands: s.describeCommands(u.cmds), Keys: s.describeKeys(), Channels: s.describeChannels()}
	}
	return out
}

// Describe is the user's rules as ACL LIST shows them after "user <name> ",
// and as the ACL file holds them: the rules that make this user from a new
// one.
func (u *User) Describe() string {
	var b strings.Builder
	for _, f := range u.Flags() {
		b.WriteString(f)
		b.WriteByte(' ')
	}
	for _, p := range u.passwords {
		b.WriteString("#" + p + " ")
	}
	b.WriteString(u.selectors[0].describe(u.cmds))
	for _, s := range u.selectors[1:] {
		b.WriteString(" (" + s.describe(u.cmds) + ")")
	}
	return b.String()
}
