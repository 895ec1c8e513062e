package acl

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// testCommands is a small command table with Redis 7.2's categories, key
// specs and channels for each: enough of every kind of command to exercise
// every rule.
func testCommands() *Commands {
	rw := KeySpec{First: 1, Last: 1, Step: 1, Perm: PermAll}
	return NewCommands([]*Command{
		{Name: "get", Categories: CatRead | CatString | CatFast, Keys: KeySpec{First: 1, Last: 1, Step: 1, Perm: PermRead}},
		{Name: "set", Categories: CatWrite | CatString | CatSlow, Keys: rw},
		{Name: "del", Categories: CatKeyspace | CatWrite | CatSlow, Keys: KeySpec{First: 1, Last: -1, Step: 1, Perm: PermWrite}},
		{Name: "exists", Categories: CatKeyspace | CatRead | CatFast, Keys: KeySpec{First: 1, Last: -1, Step: 1}},
		{Name: "flushall", Categories: CatKeyspace | CatWrite | CatSlow | CatDangerous},
		{Name: "keys", Categories: CatKeyspace | CatRead | CatSlow | CatDangerous},
		{Name: "cl.throttle", Categories: CatWrite | CatFast, Keys: rw},
		{Name: "select", Categories: CatFast | CatConnection},
		{Name: "auth", Categories: CatFast | CatConnection, NoAuth: true},
		{Name: "ping", Categories: CatFast | CatConnection},
		{Name: "publish", Categories: CatPubSub | CatFast, Channels: PublishChannel},
		{Name: "subscribe", Categories: CatPubSub | CatSlow, Channels: SubscribeChannels},
		{Name: "psubscribe", Categories: CatPubSub | CatSlow, Channels: SubscribePatterns},
		{Name: "client", Categories: CatSlow, Subcommands: []*Command{
			{Name: "client|id", Categories: CatSlow | CatConnection},
			{Name: "client|kill", Categories: CatAdmin | CatSlow | CatDangerous | CatConnection},
		}},
		{Name: "config", Categories: CatSlow, Subcommands: []*Command{
			{Name: "config|get", Categories: CatAdmin | CatSlow | CatDangerous},
			{Name: "config|rewrite", Categories: CatAdmin | CatSlow | CatDangerous},
		}},
	})
}

func args(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

// userWith is a new user with ops applied, failing the test on an error.
func userWith(t *testing.T, cs *Commands, ops string) *User {
	t.Helper()
	u, err := NewUser(cs, "u").With(strings.Fields(ops))
	require.NoError(t, err, "rules %q", ops)
	return u
}

// allowed runs command line (its name first) as u: the reason it is
// refused and the argument, or Allowed.
func allowed(t *testing.T, cs *Commands, u *User, line string) Denial {
	t.Helper()
	a := args(line)
	name := strings.ToLower(string(a[0]))
	cmd := cs.Lookup(name)
	if cmd != nil && cmd.Subcommands != nil {
		cmd = cs.Lookup(name + "|" + strings.ToLower(string(a[1])))
	}
	require.NotNil(t, cmd, line)
	return u.Check(cmd, a)
}

// Each kind of rule, as what it lets the user do and as ACL LIST describes
// the user it makes (Redis 7.2's descriptions).
func TestRules(t *testing.T) {
	cs := testCommands()
	for _, c := range []struct {
		rules    string
		describe string
		ok, no   []string // commands allowed, refused
	}{
		{"", "off sanitize-payload resetchannels -@all", nil, []string{"ping", "get k"}},
		{"on nopass +@all ~* &*", "on nopass sanitize-payload ~* &* +@all", []string{"flushall", "get any", "publish c m", "client kill x"}, nil},
		{"allcommands allkeys allchannels", "off sanitize-payload ~* &* +@all", []string{"flushall"}, nil},
		{"+get ~k*", "off sanitize-payload ~k* resetchannels -@all +get", []string{"get k1"}, []string{"set k1 v", "get x"}},
		{"+@all -flushall ~*", "off sanitize-payload ~* resetchannels +@all -flushall", []string{"get a", "keys *"}, []string{"flushall"}},
		{"+@read ~*", "off sanitize-payload ~* resetchannels -@all +@read", []string{"get a", "exists a", "keys *"}, []string{"set a b", "cl.throttle a 1 1 1"}},
		{"+@all -@dangerous ~*", "off sanitize-payload ~* resetchannels +@all -@dangerous", []string{"get a", "client id"}, []string{"flushall", "keys *", "client kill x", "config get x"}},
		{"-@all +@write -del ~*", "off sanitize-payload ~* resetchannels -@all +@write -del", []string{"set a b", "cl.throttle a 1 1 1"}, []string{"del a", "get a"}},
		{"+get +get -get +get", "off sanitize-payload resetchannels -@all +get", nil, nil},
		{"+client ~*", "off sanitize-payload ~* resetchannels -@all +client", []string{"client id", "client kill x"}, nil},
		{"+client|id", "off sanitize-payload resetchannels -@all +client|id", []string{"client id"}, []string{"client kill x"}},
		{"+client|id +client|kill -client", "off sanitize-payload resetchannels -@all -client", nil, []string{"client id", "client kill x"}},
		{"+config|get +@admin", "off sanitize-payload resetchannels -@all +config|get +@admin", []string{"config get x", "client kill y", "config rewrite"}, []string{"client id"}},
		{"+select|0 +select|1", "off sanitize-payload resetchannels -@all +select|0 +select|1", []string{"select 0", "select 1"}, []string{"select 2"}},
		{"nocommands", "off sanitize-payload resetchannels -@all", []string{"auth x"}, []string{"ping"}},
		{"+@all ~app:* %R~ro:* %W~wo:*", "off sanitize-payload ~app:* %R~ro:* %W~wo:* resetchannels +@all",
			[]string{"get app:1", "set app:1 x", "get ro:1", "exists wo:1", "del wo:1", "cl.throttle app:1 1 1 1"},
			[]string{"get x", "set ro:1 x", "get wo:1", "cl.throttle ro:1 1 1 1", "cl.throttle wo:1 1 1 1", "del app:1 ro:1"}},
		{"%R~k %W~k", "off sanitize-payload ~k resetchannels -@all", nil, nil},
		{"%RW~k %wr~j", "off sanitize-payload ~k ~j resetchannels -@all", nil, nil},
		{"~a ~b resetkeys ~c", "off sanitize-payload ~c resetchannels -@all", nil, nil},
		{"~a allkeys", "off sanitize-payload ~* resetchannels -@all", nil, nil},
		{"+@all &news.* &alerts", "off sanitize-payload resetchannels &news.* &alerts +@all",
			[]string{"publish news.eu x", "subscribe news.eu alerts", "psubscribe news.*"},
			[]string{"publish other x", "subscribe news.eu other", "psubscribe news.e*", "psubscribe *"}},
		{"+@all &a resetchannels &b", "off sanitize-payload resetchannels &b +@all", []string{"publish b x"}, []string{"publish a x"}},
		{"+@all &a allchannels", "off sanitize-payload &* +@all", []string{"publish anything x"}, nil},
		{"on >secret >other <other", "on sanitize-payload #2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b resetchannels -@all", nil, nil},
		{"on #2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b !2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b", "on sanitize-payload resetchannels -@all", nil, nil},
		{"on >a nopass", "on nopass sanitize-payload resetchannels -@all", nil, nil},
		{"on nopass >a resetpass", "on sanitize-payload resetchannels -@all", nil, nil},
		{"skip-sanitize-payload", "off skip-sanitize-payload resetchannels -@all", nil, nil},
		{"on >p +@all ~* &* reset", "off sanitize-payload resetchannels -@all", nil, []string{"get a"}},
		{"+get ~a* (+set ~b*) (~c* +get)", "off sanitize-payload ~a* resetchannels -@all +get (~b* resetchannels -@all +set) (~c* resetchannels -@all +get)",
			[]string{"get a1", "set b1 x", "get c1"}, []string{"set a1 x", "get b1", "set c1 x"}},
		{"+get ~a* (+set ~b*) clearselectors", "off sanitize-payload ~a* resetchannels -@all +get", []string{"get a1"}, []string{"set b1 x"}},
		{"+@ALL ~* -GET +Client|ID", "off sanitize-payload ~* resetchannels +@all -get +client|id", []string{"set a b"}, []string{"get a"}},
	} {
		u := userWith(t, cs, c.rules)
		require.Equal(t, c.describe, u.Describe(), "rules %q", c.rules)
		for _, line := range c.ok {
			require.Equal(t, Denial{}, allowed(t, cs, u, line), "rules %q: %s", c.rules, line)
		}
		for _, line := range c.no {
			require.NotEqual(t, Allowed, allowed(t, cs, u, line).Reason, "rules %q: %s", c.rules, line)
		}
		// What ACL LIST shows makes the same user again.
		again := userWith(t, cs, u.Describe())
		require.Equal(t, u.Describe(), again.Describe(), "rules %q read back", c.rules)
	}
}

// Each rule that cannot be applied, with its error; nothing of the rules
// is applied then.
func TestRuleErrors(t *testing.T) {
	cs := testCommands()
	for _, c := range []struct {
		rules string
		op    string
		err   error
	}{
		{"+nosuch", "+nosuch", ErrUnknownCommand},
		{"-nosuch", "-nosuch", ErrUnknownCommand},
		{"+@nosuch", "+@nosuch", ErrUnknownCommand},
		{"-@", "-@", ErrUnknownCommand},
		{"+", "+", ErrUnknownCommand},
		{"+client|nosuch", "+client|nosuch", ErrUnknownCommand},
		{"+client|id|x", "+client|id|x", ErrFirstArgOfSubcommand},
		{"+get|", "+get|", ErrSyntax},
		{"-select|0", "-select|0", ErrUnknownCommand},
		{"bogus", "bogus", ErrSyntax},
		{"%~k", "%~k", ErrSyntax},
		{"%R", "%R", ErrSyntax},
		{"%RR~k", "%RR~k", ErrSyntax},
		{"%X~k", "%X~k", ErrSyntax},
		{"~a\tb", "~a\tb", ErrSyntax},
		{"&a\x00b", "&a\x00b", ErrSyntax},
		{"allkeys ~k", "~k", ErrPatternAfterAllKeys},
		{"~* %R~k", "%R~k", ErrPatternAfterAllKeys},
		{"&* &c", "&c", ErrPatternAfterAllChannels},
		{"<nosuch", "<nosuch", ErrNoSuchPassword},
		{"#abc", "#abc", ErrBadHash},
		{"!" + strings.Repeat("A", 64), "!" + strings.Repeat("A", 64), ErrBadHash},
		{"!" + strings.Repeat("a", 64), "!" + strings.Repeat("a", 64), ErrNoSuchPassword},
		{"(+get on)", "(+get on)", ErrSyntax},
		{"on (~a +get", "(~a", ErrUnmatchedParen},
	} {
		_, err := NewUser(cs, "u").With(strings.Split(c.rules, " "))
		var re *RuleError
		require.True(t, errors.As(err, &re), "rules %q: %v", c.rules, err)
		require.Equal(t, c.op, re.Op, "rules %q", c.rules)
		require.ErrorIs(t, err, c.err, "rules %q", c.rules)
	}
}

// A selector's rules come as one argument or spread over several, as ACL
// SETUSER takes them from redis-cli.
func TestMergeSelectors(t *testing.T) {
	got, err := MergeSelectors([]string{"on", "(~a", "+get", "+set)", "(~b)", "+ping"})
	require.NoError(t, err)
	require.Equal(t, []string{"on", "(~a +get +set)", "(~b)", "+ping"}, got)
}

func TestPasswords(t *testing.T) {
	cs := testCommands()
	u := userWith(t, cs, "on >one >two")
	require.True(t, u.CheckPassword([]byte("one")))
	require.True(t, u.CheckPassword([]byte("two")))
	require.False(t, u.CheckPassword([]byte("three")))
	require.False(t, u.CheckPassword(nil))
	require.Equal(t, []string{HashPassword([]byte("one")), HashPassword([]byte("two"))}, u.Passwords())

	off := userWith(t, cs, "off >one")
	require.False(t, off.CheckPassword([]byte("one")), "a user that is off opens with no password")
	require.True(t, userWith(t, cs, "on nopass").CheckPassword([]byte("anything")))
	require.False(t, userWith(t, cs, "on").CheckPassword([]byte("")), "a user on without a password opens with none")

	def := DefaultUser(cs, "")
	require.True(t, def.NoPass())
	require.True(t, def.Unrestricted())
	require.Equal(t, "on nopass sanitize-payload ~* &* +@all", def.Describe())
	def = DefaultUser(cs, "secret")
	require.True(t, def.CheckPassword([]byte("secret")))
	require.False(t, def.CheckPassword([]byte("Secret")))
	require.Equal(t, "on sanitize-payload #2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b ~* &* +@all", def.Describe())
}

// Only a user allowed everything is unrestricted: the server checks
// nothing for it.
func TestUnrestricted(t *testing.T) {
	cs := testCommands()
	for rules, want := range map[string]bool{
		"+@all ~* &*":               true,
		"+@all allkeys allchannels": true,
		"+@all ~* &* -flushall":     false,
		"+@all ~* &* -@all +@all":   true,
		"+@all ~*":                  false,
		"+@all %RW~* &*":            false, // a pattern *, not allkeys: Redis checks keys for it
		"-@all +@all ~* &* +get":    true,
		"+get (+@all ~* &*)":        true,
	} {
		require.Equal(t, want, userWith(t, cs, rules).Unrestricted(), rules)
	}
}

// Which refusal a command gets: the command before its keys, the first key
// refused, channels; among several selectors, Redis's choice.
func TestCheckDenials(t *testing.T) {
	cs := testCommands()
	u := userWith(t, cs, "+@all ~a* &c*")
	require.Equal(t, Denial{Reason: DeniedKey, Arg: 2}, allowed(t, cs, u, "del a1 b1 a2"))
	require.Equal(t, Denial{Reason: DeniedChannel, Arg: 2}, allowed(t, cs, u, "subscribe c1 d1"))
	require.Equal(t, Denial{Reason: DeniedChannel, Arg: 1}, allowed(t, cs, u, "publish d x"))
	require.Equal(t, Denial{}, allowed(t, cs, u, "exists a1"))

	u = userWith(t, cs, "+get ~a*")
	require.Equal(t, Denial{Reason: DeniedCommand}, allowed(t, cs, u, "set b x"))

	// Two selectors: the key refusal outranks the command's; of two key
	// refusals the later argument is reported.
	u = userWith(t, cs, "+get ~a* (+del ~b*)")
	require.Equal(t, Denial{Reason: DeniedKey, Arg: 1}, allowed(t, cs, u, "get z"))
	require.Equal(t, Denial{Reason: DeniedKey, Arg: 2}, allowed(t, cs, u, "del b1 z"))
	require.Equal(t, Denial{}, allowed(t, cs, u, "del b1 b2"))
	require.Equal(t, Denial{Reason: DeniedCommand}, allowed(t, cs, u, "set a x"))

	// AUTH runs for anyone.
	require.Equal(t, Denial{}, allowed(t, cs, userWith(t, cs, ""), "auth p"))
}

// A subscriber keeps a subscription its user's channels still allow.
func TestMaySubscribe(t *testing.T) {
	cs := testCommands()
	u := userWith(t, cs, "&news.* (&alerts)")
	require.True(t, u.MaySubscribe("news.eu", false))
	require.True(t, u.MaySubscribe("alerts", false))
	require.True(t, u.MaySubscribe("news.*", true))
	require.False(t, u.MaySubscribe("news.e*", true))
	require.False(t, u.MaySubscribe("other", false))
	require.True(t, userWith(t, cs, "allchannels").MaySubscribe("x*", true))
}

func TestUserViews(t *testing.T) {
	cs := testCommands()
	u := userWith(t, cs, "on nopass +get ~a* %R~b* &c (+set ~d*)")
	require.Equal(t, []string{"on", "nopass", "sanitize-payload"}, u.Flags())
	require.Equal(t, []SelectorRules{
		{Commands: "-@all +get", Keys: "~a* %R~b*", Channels: "&c"},
		{Commands: "-@all +set", Keys: "~d*", Channels: ""},
	}, u.Selectors())
	require.Equal(t, []string{"client|kill", "config|get", "config|rewrite"}, cs.InCategory(CatAdmin))
	require.Equal(t, []string{"@write", "@fast"}, (CatWrite | CatFast).Names())
	require.Equal(t, CatDangerous, CategoryByName("DANGEROUS"))
	require.Equal(t, CatWrite|CatFast, Category(0).Implied(true, false, false, false, true, false))
	require.Equal(t, CatAdmin|CatSlow|CatDangerous, Category(0).Implied(false, false, true, false, false, false))
	require.True(t, ValidName("app"))
	require.False(t, ValidName("a b"))
}
