package acl

import (
	"strings"
	"unsafe"
)

// Reason is why a user is refused something: Redis's ACL_DENIED_*, in its
// order, which ranks the refusals of several selectors (Check).
type Reason uint8

// The reasons. Allowed is no refusal.
const (
	Allowed Reason = iota
	DeniedCommand
	DeniedKey
	DeniedAuth
	DeniedChannel
)

// String is the reason as ACL LOG names it.
func (r Reason) String() string {
	switch r {
	case DeniedCommand:
		return "command"
	case DeniedKey:
		return "key"
	case DeniedAuth:
		return "auth"
	case DeniedChannel:
		return "channel"
	}
	return "unknown"
}

// Denial is the outcome of Check: Allowed, or the reason and the position
// of the argument refused (a key, a channel; 0 for the command itself).
type Denial struct {
	Reason Reason
	Arg    int
}

// Check reports whether u may run cmd (a subcommand when a container's is
// run) with args, args[0] being the command's name as sent: the command
// itself, every key it touches with the access it needs, every channel it
// names. A user with several selectors may when one of them allows all
// of it; otherwise the refusal reported is Redis's choice: the highest
// reason among the selectors', and for equal reasons the last argument.
// It does not allocate.
func (u *User) Check(cmd *Command, args [][]byte) Denial {
	worst := Denial{Reason: DeniedCommand}
	for _, s := range u.selectors {
		d := s.check(cmd, args)
		if d.Reason == Allowed {
			return d
		}
		if d.Reason > worst.Reason || (d.Reason == worst.Reason && d.Arg > worst.Arg) {
			worst = d
		}
	}
	return worst
}

func (s *selector) check(cmd *Command, args [][]byte) Denial {
	if !s.allCommands && !cmd.NoAuth && !s.bit(cmd.id) && !s.firstArgAllowed(cmd, args) {
		return Denial{Reason: DeniedCommand}
	}
	if !s.allKeys && cmd.Keys.Step > 0 {
		last := cmd.Keys.Last
		if last < 0 {
			last += len(args)
		}
		for i := cmd.Keys.First; i <= last && i < len(args); i += cmd.Keys.Step {
			if !s.keyAllowed(args[i], cmd.Keys.Perm) {
				return Denial{Reason: DeniedKey, Arg: i}
			}
		}
	}
	if !s.allChannels && cmd.Channels != NoChannels {
		last := len(args) - 1
		if cmd.Channels == PublishChannel {
			last = min(last, 1)
		}
		for i := 1; i <= last; i++ {
			if !s.channelAllowed(bytesString(args[i]), cmd.Channels == SubscribePatterns) {
				return Denial{Reason: DeniedChannel, Arg: i}
			}
		}
	}
	return Denial{}
}

// firstArgAllowed reports whether the command, refused as such, is allowed
// with its first argument (+select|0).
func (s *selector) firstArgAllowed(cmd *Command, args [][]byte) bool {
	allowed := s.firstArgs[cmd.id]
	idx := 1
	if cmd.parent != nil {
		idx = 2
	}
	if len(allowed) == 0 || len(args) <= idx {
		return false
	}
	for _, a := range allowed {
		if strings.EqualFold(a, bytesString(args[idx])) {
			return true
		}
	}
	return false
}

// keyAllowed reports whether a pattern granting perm matches key.
func (s *selector) keyAllowed(key []byte, perm Perm) bool {
	k := bytesString(key)
	for _, p := range s.keys {
		if p.perm&perm == perm && p.match(k) {
			return true
		}
	}
	return false
}

// channelAllowed reports whether one of the selector's channel patterns
// allows channel: matching it, or, for a pattern subscribed to
// (PSUBSCRIBE), equal to it.
func (s *selector) channelAllowed(channel string, isPattern bool) bool {
	if s.allChannels {
		return true
	}
	for _, p := range s.channels {
		if isPattern {
			if p.text == channel {
				return true
			}
		} else if p.match(channel) {
			return true
		}
	}
	return false
}

// MaySubscribe reports whether u may be subscribed to channel, a pattern
// if isPattern: whether a client of u's keeps its subscription once u's
// rules change.
func (u *User) MaySubscribe(channel string, isPattern bool) bool {
	for _, s := range u.selectors {
		if s.channelAllowed(channel, isPattern) {
			return true
		}
	}
	return false
}

// bytesString reads b as a string without copying it; the string must not
// outlive b's contents.
func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
