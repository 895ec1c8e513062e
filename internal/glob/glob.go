// Package glob is Redis's glob matching (stringmatchlen), for KEYS, SCAN,
// PSUBSCRIBE, COMMAND LIST FILTERBY PATTERN, CONFIG GET and ACL key and
// channel patterns: one implementation, so that each answers as Redis.
package glob

// Match reports whether s matches the Redis glob pattern: * any run, ?
// any byte, [abc] [^abc] [a-z] classes, and \x for a literal x. It follows
// Redis's stringmatchlen, including its treatment of malformed patterns and
// its defence against abusive ones: a failed '*' stops the earlier '*'s from
// trying longer matches, so the work is polynomial, not exponential, in the
// number of '*' (CVE-2022-36021), and nesting is capped.
func Match(pattern []byte, s string) bool {
	skipLonger := false
	return matchFrom(pattern, s, &skipLonger, 0)
}

// maxNesting is Redis's cap on '*' recursion.
const maxNesting = 1000

func matchFrom(pattern []byte, s string, skipLonger *bool, nesting int) bool {
	if nesting > maxNesting {
		return false
	}
	for len(pattern) > 0 && len(s) > 0 {
		switch pattern[0] {
		case '*':
			for len(pattern) > 1 && pattern[1] == '*' {
				pattern = pattern[1:]
			}
			if len(pattern) == 1 {
				return true
			}
			for ; len(s) > 0; s = s[1:] {
				if matchFrom(pattern[1:], s, skipLonger, nesting+1) {
					return true
				}
				if *skipLonger {
					return false
				}
			}
			// The rest of the pattern matches nowhere in the rest of s, so
			// no earlier '*' can help by matching more: give up entirely.
			*skipLonger = true
			return false
		case '?':
			s = s[1:]
		case '[':
			pattern = pattern[1:]
			not := len(pattern) > 0 && pattern[0] == '^'
			if not {
				pattern = pattern[1:]
			}
			match := false
			for len(pattern) > 0 && pattern[0] != ']' {
				switch {
				case pattern[0] == '\\' && len(pattern) >= 2:
					pattern = pattern[1:]
					if pattern[0] == s[0] {
						match = true
					}
				case len(pattern) >= 3 && pattern[1] == '-':
					lo, hi := pattern[0], pattern[2]
					if lo > hi {
						lo, hi = hi, lo
					}
					if s[0] >= lo && s[0] <= hi {
						match = true
					}
					pattern = pattern[2:]
				default:
					if pattern[0] == s[0] {
						match = true
					}
				}
				pattern = pattern[1:]
			}
			if len(pattern) == 0 {
				// An unterminated class: Redis treats the pattern end as ']'.
				pattern = []byte{']'}
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			s = s[1:]
		case '\\':
			if len(pattern) >= 2 {
				pattern = pattern[1:]
			}
			fallthrough
		default:
			if pattern[0] != s[0] {
				return false
			}
			s = s[1:]
		}
		pattern = pattern[1:]
	}
	// s is used up: trailing '*'s match the empty rest.
	if len(s) == 0 {
		for len(pattern) > 0 && pattern[0] == '*' {
			pattern = pattern[1:]
		}
	}
	return len(pattern) == 0 && len(s) == 0
}
