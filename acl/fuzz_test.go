package acl

import (
	"strings"
	"testing"

	"github.com/redcell/redcell/internal/glob"
)

// Fuzzing the rules and the file: any input is refused with an error or
// makes users, never a panic; a user made reads back from its description
// (ACL LIST's, the file's) as the same user; the check of any command is
// answered; an unrestricted user is refused nothing.
//
//	go test -run '^$' -fuzz '^FuzzRules$' -fuzztime 10m ./acl/
//	go test -run '^$' -fuzz '^FuzzLoad$' -fuzztime 10m ./acl/

func FuzzRules(f *testing.F) {
	for _, seed := range []string{
		"on\n>secret\n~app:*\n+cl.throttle",
		"on\nnopass\n+@all\n~*\n&*\n-flushall",
		"+@read\n-keys\n%R~ro:*\n%W~w:*\n&news.*",
		"+client|id\n+select|0\n(~b* +set)\nclearselectors\n(~c*\n+get)",
		"reset\n#2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b\n!2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b",
		"allkeys\n~x",
		"%RW~*\nresetkeys\n-@all\n+@ALL\n-@dangerous\n+config|get",
	} {
		f.Add(seed)
	}
	cs := testCommands()
	f.Fuzz(func(t *testing.T, in string) {
		u, err := NewUser(cs, "u").With(strings.Split(in, "\n"))
		if err != nil {
			return
		}
		checkAll(t, cs, u)
		if parensInside(u) {
			return // Redis's description cannot be read back then either
		}
		desc := u.Describe()
		again, err := NewUser(cs, "u").With(strings.Split(desc, " "))
		if err != nil {
			t.Fatalf("rules %q describe as %q, which fail: %v", in, desc, err)
		}
		if got := again.Describe(); got != desc {
			t.Fatalf("rules %q describe as %q, which read back as %q", in, desc, got)
		}
		if again.Unrestricted() != u.Unrestricted() {
			t.Fatalf("rules %q: unrestricted %v, read back %v", in, u.Unrestricted(), again.Unrestricted())
		}
	})
}

func FuzzLoad(f *testing.F) {
	f.Add([]byte(redisSaved))
	f.Add([]byte("user default on >pw ~* &* +@all\nuser app on >x ~app:* +cl.throttle\n"))
	f.Add([]byte("user a (~x\n+get)\nuser b  on\n\n# no\n"))
	cs := testCommands()
	def := DefaultUser(cs, "")
	f.Fuzz(func(t *testing.T, data []byte) {
		us, errs := Load(cs, data, def)
		if len(errs) > 0 {
			if us != nil {
				t.Fatal("users loaded beside errors")
			}
			return
		}
		if us.Get("default") == nil {
			t.Fatal("no default user")
		}
		for _, u := range us.All() {
			checkAll(t, cs, u)
			if parensInside(u) {
				return
			}
		}
		saved := us.Save()
		again, errs := Load(cs, saved, def)
		if len(errs) > 0 {
			t.Fatalf("%q saves as %q, which fails to load: %v", data, saved, errs)
		}
		if got := again.Save(); string(got) != string(saved) {
			t.Fatalf("%q saves as %q, which loads and saves as %q", data, saved, got)
		}
	})
}

// checkAll checks every command of cs as u with a few arguments: each is
// answered, and an unrestricted user is refused none.
func checkAll(t *testing.T, cs *Commands, u *User) {
	argv := args("cmd key:1 news.eu x y")
	for _, c := range cs.byName {
		for n := 1; n <= len(argv); n++ {
			d := u.Check(c, argv[:n])
			if u.Unrestricted() && d.Reason != Allowed {
				t.Fatalf("unrestricted %q refused %s: %v", u.Describe(), c.Name, d)
			}
		}
	}
}

// parensInside reports whether a pattern or a rule of u holds a
// parenthesis: a selector's description then splits where it should not
// (in Redis too), and does not read back.
func parensInside(u *User) bool {
	has := func(s string) bool { return strings.ContainsAny(s, "()") }
	for _, s := range u.selectors {
		for _, k := range s.keys {
			if has(k.text) {
				return true
			}
		}
		for _, c := range s.channels {
			if has(c.text) {
				return true
			}
		}
		for _, r := range s.rules {
			if has(r) {
				return true
			}
		}
	}
	return false
}

// A pattern matched by equality or by its prefix matches exactly what
// Redis's glob matches.
//
//	go test -run '^$' -fuzz '^FuzzPatternAsGlob$' -fuzztime 5m ./acl/
func FuzzPatternAsGlob(f *testing.F) {
	for _, seed := range [][2]string{{"rl:app:*", "rl:app:1"}, {"rl:app:*", "rl:ap"}, {"*", ""}, {"k", "k"}, {"k", "K"},
		{"a\\*", "a*"}, {"a*b", "axb"}, {"a[bc]*", "ab"}, {"**", "x"}, {"a?", "ab"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pat, s string) {
		if got, want := newPattern(pat).match(s), glob.Match([]byte(pat), s); got != want {
			t.Fatalf("pattern %q on %q: %v, Redis's glob %v", pat, s, got, want)
		}
	})
}
