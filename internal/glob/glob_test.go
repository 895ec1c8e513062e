package glob

import (
	"strings"
	"testing"
	"time"
)

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "anything", true},
		{"**", "anything", true},
		{"user:*", "user:", true},
		{"user:*", "user:42", true},
		{"user:*", "admin:42", false},
		{"*:42", "user:42", true},
		{"*:42", "user:420", false},
		{"h*llo", "hllo", true},
		{"h*llo", "heeeello", true},
		{"h*llo", "hello!", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxcyyb", false},
		{"x*", "x", true},

		{"h?llo", "hello", true},
		{"h?llo", "hallo", true},
		{"h?llo", "hllo", false},
		{"?", "", false},
		{"??", "a", false},

		{"h[ae]llo", "hello", true},
		{"h[ae]llo", "hallo", true},
		{"h[ae]llo", "hillo", false},
		{"h[^e]llo", "hallo", true},
		{"h[^e]llo", "hbllo", true},
		{"h[^e]llo", "hello", false},
		{"h[a-b]llo", "hallo", true},
		{"h[a-b]llo", "hbllo", true},
		{"h[a-b]llo", "hcllo", false},
		{"h[b-a]llo", "hallo", true}, // a reversed range is swapped
		{"[0-9][0-9]", "42", true},
		{"[0-9][0-9]", "4x", false},
		{"[^0-9]*", "x1", true},
		{"[^0-9]*", "1x", false},
		{`[\]]`, "]", true},
		{`[\-]`, "-", true},
		{`[\-]`, "a", false},
		{"[abc", "a", true},   // unterminated class: the end closes it
		{"[abc", "ab", false}, // ...and matches one byte
		{"[]", "a", false},

		{`\*`, "*", true},
		{`\*`, "a", false},
		{`a\?b`, "a?b", true},
		{`a\?b`, "axb", false},
		{`\[x]`, "[x]", true},
		{`\\`, `\`, true},
		{`a\`, `a\`, true}, // a trailing backslash is literal

		{"", "", true},
		{"", "a", false},
		{"abc", "abc", true},
		{"abc", "ab", false},
		{"ab", "abc", false},
		{"a", "A", false}, // case-sensitive, as KEYS is
	} {
		if got := Match([]byte(c.pattern), c.s); got != c.want {
			t.Errorf("Match(%q, %q) = %v want %v", c.pattern, c.s, got, c.want)
		}
	}
}

// Many '*' against a long near-miss took exponential time (a KEYS or SCAN
// MATCH from any client could pin a CPU under a shard lock). Redis's fix,
// CVE-2022-36021, makes it polynomial; so must ours.
func TestMatchAbusivePatternIsFast(t *testing.T) {
	pattern := []byte(strings.Repeat("*a", 30) + "*b")
	s := strings.Repeat("a", 1000)
	done := make(chan bool, 1)
	go func() { done <- Match(pattern, s) }()
	select {
	case got := <-done:
		if got {
			t.Fatal("matched a string without 'b'")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Match did not finish in 10s: exponential backtracking")
	}
	if !Match(pattern, s+"b") {
		t.Fatal("did not match once the 'b' is there")
	}
	deep := []byte(strings.Repeat("*?", 2000))
	if Match(deep, strings.Repeat("x", 3000)) {
		t.Fatal("nesting beyond Redis's cap of 1000 must not match")
	}
}

func BenchmarkMatch(b *testing.B) {
	b.ReportAllocs()
	p := []byte("user:*:session[0-9]")
	for b.Loop() {
		Match(p, "user:12345:session7")
	}
}
