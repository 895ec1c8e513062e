package server

// globMatch reports whether s matches the Redis glob pattern: * any run, ?
// any byte, [abc] [^abc] [a-z] classes, and \x for a literal x. It follows
// Redis's stringmatchlen, including its treatment of malformed patterns.
func globMatch(pattern []byte, s string) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			for len(pattern) > 1 && pattern[1] == '*' {
				pattern = pattern[1:]
			}
			if len(pattern) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if globMatch(pattern[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
			s = s[1:]
		case '[':
			if len(s) == 0 {
				return false
			}
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
			if len(s) == 0 || pattern[0] != s[0] {
				return false
			}
			s = s[1:]
		}
		pattern = pattern[1:]
	}
	return len(s) == 0
}
