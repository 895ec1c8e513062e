package acl

import (
	"slices"
	"strings"
)

// A selector is one set of permissions: the commands it allows, the keys
// and the channels. A user has a root selector and any number of others
// ((...) rules); a command runs when one of them allows all of it.
type selector struct {
	// allCommands is Redis's SELECTOR_FLAG_ALLCOMMANDS: set by +@all,
	// cleared by any rule that takes a command away.
	allCommands bool
	allKeys     bool
	allChannels bool
	// allowed has a bit per command ID, and the future bit (Commands).
	allowed []uint64
	// firstArgs are the first arguments allowed of a command otherwise
	// refused (+select|0), by command ID; nil when there are none.
	firstArgs map[int][]string
	keys      []keyPattern
	channels  []pattern
	// rules are the command rules in force, in order, each "+name" or
	// "-name" in lower case ("+@read", "-keys", "+client|id"): what ACL
	// LIST shows after +@all or -@all.
	rules []string
}

// keyPattern is a key pattern and the access it grants: ~p is both,
// %R~p read, %W~p write.
type keyPattern struct {
	pattern
	perm Perm
}

func newSelector(cs *Commands) *selector {
	return &selector{allowed: make([]uint64, cs.words())}
}

func (s *selector) clone() *selector {
	c := *s
	c.allowed = slices.Clone(s.allowed)
	c.keys = slices.Clone(s.keys)
	c.channels = slices.Clone(s.channels)
	c.rules = slices.Clone(s.rules)
	if s.firstArgs != nil {
		c.firstArgs = make(map[int][]string, len(s.firstArgs))
		for id, a := range s.firstArgs {
			c.firstArgs[id] = slices.Clone(a)
		}
	}
	return &c
}

func (s *selector) bit(id int) bool { return s.allowed[id/64]&(1<<(id%64)) != 0 }

// setBit allows or refuses one command ID; refusing one ends allCommands.
func (s *selector) setBit(id int, allow bool) {
	if allow {
		s.allowed[id/64] |= 1 << (id % 64)
		return
	}
	s.allowed[id/64] &^= 1 << (id % 64)
	s.allCommands = false
}

// changePerm allows or refuses cmd, and a container's subcommands with it.
func (s *selector) changePerm(cmd *Command, allow bool) {
	s.setBit(cmd.id, allow)
	delete(s.firstArgs, cmd.id)
	for _, sub := range cmd.Subcommands {
		s.setBit(sub.id, allow)
	}
}

// setAll is +@all (allow) or -@all.
func (s *selector) setAll(allow bool) {
	var w uint64
	if allow {
		w = ^uint64(0)
	}
	for i := range s.allowed {
		s.allowed[i] = w
	}
	s.allCommands = allow
	s.rules = nil
	s.firstArgs = nil
}

// updateRules records a command rule in order, in lower case: the rules
// it overrides (the same command or category, or a subcommand of the
// command) are dropped first.
func (s *selector) updateRules(rule string, allow bool) {
	rule = strings.ToLower(rule)
	s.rules = slices.DeleteFunc(s.rules, func(r string) bool {
		body := r[1:]
		return body == rule || (len(body) > len(rule) && body[len(rule)] == '|' && body[:len(rule)] == rule)
	})
	sign := "-"
	if allow {
		sign = "+"
	}
	s.rules = append(s.rules, sign+rule)
}

// setCategory is +@category (allow) or -@category; name keeps its '@'.
func (s *selector) setCategory(cs *Commands, name string, allow bool) error {
	cat := CategoryByName(name[1:])
	if cat == 0 {
		return ErrUnknownCommand
	}
	s.updateRules(name, allow)
	for _, c := range cs.top {
		if c.Categories&cat != 0 {
			s.changePerm(c, allow)
		}
		for _, sub := range c.Subcommands {
			if sub.Categories&cat != 0 {
				s.changePerm(sub, allow)
			}
		}
	}
	return nil
}

// hasSpace is Redis's ACLStringHasSpaces: a pattern or a user name may not
// hold whitespace or a NUL.
func hasSpace(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\v', '\f', '\r', 0:
			return true
		}
	}
	return false
}

// set applies one rule of a selector's kind: commands, keys, channels.
func (s *selector) set(cs *Commands, op string) error {
	switch {
	case strings.EqualFold(op, "allkeys"), op == "~*":
		s.allKeys, s.keys = true, nil
	case strings.EqualFold(op, "resetkeys"):
		s.allKeys, s.keys = false, nil
	case strings.EqualFold(op, "allchannels"), op == "&*":
		s.allChannels, s.channels = true, nil
	case strings.EqualFold(op, "resetchannels"):
		s.allChannels, s.channels = false, nil
	case strings.EqualFold(op, "allcommands"), strings.EqualFold(op, "+@all"):
		s.setAll(true)
	case strings.EqualFold(op, "nocommands"), strings.EqualFold(op, "-@all"):
		s.setAll(false)
	case op[0] == '~' || op[0] == '%':
		return s.addKeyPattern(op)
	case op[0] == '&':
		if s.allChannels {
			return ErrPatternAfterAllChannels
		}
		pat := op[1:]
		if hasSpace(pat) {
			return ErrSyntax
		}
		if !slices.ContainsFunc(s.channels, func(c pattern) bool { return c.text == pat }) {
			s.channels = append(s.channels, newPattern(pat))
		}
	case len(op) > 1 && op[1] == '@' && (op[0] == '+' || op[0] == '-'):
		return s.setCategory(cs, op[1:], op[0] == '+')
	case op[0] == '+':
		return s.allowCommand(cs, op[1:])
	case op[0] == '-':
		cmd := cs.lookupRule(op[1:])
		if cmd == nil {
			return ErrUnknownCommand
		}
		s.changePerm(cmd, false)
		s.updateRules(cmd.Name, false)
	default:
		return ErrSyntax
	}
	return nil
}

// addKeyPattern is ~pattern, %R~pattern, %W~pattern or %RW~pattern. Redis
// takes "%R" without a '~' as the empty pattern; redcell refuses it.
func (s *selector) addKeyPattern(op string) error {
	if s.allKeys {
		return ErrPatternAfterAllKeys
	}
	perm, rest := PermAll, op[1:]
	if op[0] == '%' {
		perm = 0
		for {
			if rest == "" {
				return ErrSyntax
			}
			c := rest[0]
			rest = rest[1:]
			switch {
			case (c == 'R' || c == 'r') && perm&PermRead == 0:
				perm |= PermRead
				continue
			case (c == 'W' || c == 'w') && perm&PermWrite == 0:
				perm |= PermWrite
				continue
			case c == '~' && perm != 0:
			default:
				return ErrSyntax
			}
			break
		}
	}
	if hasSpace(rest) {
		return ErrSyntax
	}
	for i := range s.keys {
		if s.keys[i].text == rest {
			s.keys[i].perm |= perm
			return nil
		}
	}
	s.keys = append(s.keys, keyPattern{pattern: newPattern(rest), perm: perm})
	return nil
}

// allowCommand is +name: a command, a container's subcommand
// (+client|id), or the first argument of another command (+select|0),
// which Redis deprecates but still honours.
func (s *selector) allowCommand(cs *Commands, name string) error {
	bar := strings.LastIndexByte(name, '|')
	if bar < 0 {
		cmd := cs.lookupRule(name)
		if cmd == nil {
			return ErrUnknownCommand
		}
		s.changePerm(cmd, true)
		s.updateRules(cmd.Name, true)
		return nil
	}
	cmd := cs.lookupRule(name[:bar])
	switch {
	case cmd == nil:
		return ErrUnknownCommand
	case cmd.parent != nil:
		return ErrFirstArgOfSubcommand
	case bar == len(name)-1:
		return ErrSyntax
	case cmd.Subcommands != nil:
		sub := cs.lookupRule(name)
		if sub == nil {
			return ErrUnknownCommand
		}
		s.changePerm(sub, true)
	case hasSpace(name[bar+1:]):
		// Redis takes it, and then describes the user in rules that do
		// not read back.
		return ErrSyntax
	default:
		arg := name[bar+1:]
		if s.firstArgs == nil {
			s.firstArgs = make(map[int][]string)
		}
		if !slices.ContainsFunc(s.firstArgs[cmd.id], func(a string) bool { return strings.EqualFold(a, arg) }) {
			s.firstArgs[cmd.id] = append(s.firstArgs[cmd.id], arg)
		}
	}
	s.updateRules(name, true)
	return nil
}

// lookupRule finds the command a rule names: a command, or a container's
// subcommand "parent|sub"; more than one '|' names nothing.
func (cs *Commands) lookupRule(name string) *Command {
	if strings.Count(name, "|") > 1 {
		return nil
	}
	return cs.Lookup(name)
}

// describeCommands is the selector's command rules as ACL LIST shows them:
// +@all or -@all, then the rules in force.
func (s *selector) describeCommands(cs *Commands) string {
	var b strings.Builder
	if s.bit(cs.futureBit()) {
		b.WriteString("+@all")
	} else {
		b.WriteString("-@all")
	}
	for _, r := range s.rules {
		b.WriteByte(' ')
		b.WriteString(r)
	}
	return b.String()
}

// describeKeys is the selector's key patterns: ~* for every key, else
// each pattern with its access (~p, %R~p, %W~p), space-separated.
func (s *selector) describeKeys() string {
	if s.allKeys {
		return "~*"
	}
	parts := make([]string, len(s.keys))
	for i, k := range s.keys {
		parts[i] = k.String()
	}
	return strings.Join(parts, " ")
}

// describeChannels is the selector's channel patterns: &* for every
// channel, else each &pattern, space-separated.
func (s *selector) describeChannels() string {
	if s.allChannels {
		return "&*"
	}
	parts := make([]string, len(s.channels))
	for i, c := range s.channels {
		parts[i] = "&" + c.text
	}
	return strings.Join(parts, " ")
}

func (k keyPattern) String() string {
	switch k.perm {
	case PermRead:
		return "%R~" + k.text
	case PermWrite:
		return "%W~" + k.text
	}
	return "~" + k.text
}

// describe is the whole selector as ACL LIST shows it: keys, channels
// (resetchannels before a list, so that the rules read back alone give
// it), then commands.
func (s *selector) describe(cs *Commands) string {
	var b strings.Builder
	if k := s.describeKeys(); k != "" {
		b.WriteString(k)
		b.WriteByte(' ')
	}
	if s.allChannels {
		b.WriteString("&* ")
	} else {
		b.WriteString("resetchannels ")
		for _, c := range s.channels {
			b.WriteString("&" + c.text + " ")
		}
	}
	b.WriteString(s.describeCommands(cs))
	return b.String()
}

// unrestricted reports whether the selector allows every command, key
// and channel.
func (s *selector) unrestricted() bool { return s.allCommands && s.allKeys && s.allChannels }
