package resp

// splitArgs splits an inline command line into arguments as Redis's
// sdssplitargs does, appending them to args: blanks separate arguments; in
// "double quotes" \n \r \t \b \a \xHH and \<any> are escapes; in 'single
// quotes' \' is; a closing quote must be followed by a blank or the end; a
// NUL byte ends the line, as in C. It reports false for unbalanced quotes.
//
// It unescapes in place: an argument is never longer than the bytes it is
// written with, so each is written over the line, at or before where it was
// read, and the arguments are slices of line.
func splitArgs(line []byte, args [][]byte) ([][]byte, bool) {
	at := func(i int) byte {
		if i < len(line) {
			return line[i]
		}
		return 0
	}
	w := 0 // line[:w] holds the arguments so far, unescaped
	p := 0
	for {
		for isSpace(at(p)) {
			p++
		}
		if at(p) == 0 {
			return args, true
		}
		start := w
		var quote byte // the quote the argument is in, '"' or '\'', or 0
		for done := false; !done; {
			c := at(p)
			switch {
			case quote == 0:
				switch c {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"', '\'':
					quote = c
				default:
					line[w] = c
					w++
				}
			case quote == '"' && c == '\\' && at(p+1) == 'x' && isHex(at(p+2)) && isHex(at(p+3)):
				line[w] = unhex(at(p+2))<<4 | unhex(at(p+3))
				w++
				p += 3
			case quote == '"' && c == '\\' && at(p+1) != 0:
				p++
				line[w] = unescape(at(p))
				w++
			case quote == '\'' && c == '\\' && at(p+1) == '\'':
				p++
				line[w] = '\''
				w++
			case c == quote:
				if n := at(p + 1); n != 0 && !isSpace(n) {
					return args, false
				}
				done = true
			case c == 0:
				return args, false
			default:
				line[w] = c
				w++
			}
			if c != 0 {
				p++
			}
		}
		args = append(args, line[start:w:w])
	}
}

// unescape is the byte that \c stands for in double quotes: \n \r \t \b
// \a as in C, any other c itself.
func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}

// isSpace is C's isspace.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	default:
		return c - 'a' + 10
	}
}
