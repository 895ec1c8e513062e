package acl

import (
	"strings"
	"unsafe"

	"github.com/redcell/redcell/internal/glob"
)

// pattern is a key or channel pattern, with how it is matched: most users'
// patterns are a prefix and a '*' ("rl:app:*"), which a comparison of the
// prefix matches as Redis's glob would, in a tenth of the work a decision
// would otherwise spend matching it (BenchmarkThrottleHandlerRestricted);
// a pattern without glob characters is matched by equality; any other by
// Redis's glob.
type pattern struct {
	text string
	kind patternKind
}

type patternKind uint8

const (
	patternGlob    patternKind = iota
	patternLiteral             // no * ? [ \: the key itself
	patternPrefix              // a literal, then one '*' at the end
)

func newPattern(text string) pattern {
	switch i := strings.IndexAny(text, "*?[\\"); {
	case i < 0:
		return pattern{text: text, kind: patternLiteral}
	case i == len(text)-1 && text[i] == '*':
		return pattern{text: text, kind: patternPrefix}
	}
	return pattern{text: text, kind: patternGlob}
}

// match reports whether s matches the pattern, as Redis's stringmatchlen
// would.
func (p pattern) match(s string) bool {
	switch p.kind {
	case patternLiteral:
		return s == p.text
	case patternPrefix:
		return strings.HasPrefix(s, p.text[:len(p.text)-1])
	}
	return glob.Match(unsafe.Slice(unsafe.StringData(p.text), len(p.text)), s)
}
