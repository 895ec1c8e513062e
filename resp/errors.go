package resp

import "errors"

// ProtocolError is input Redis refuses as malformed or too large: the
// connection answers Reply as an error and closes.
type ProtocolError struct {
	// Reply is Redis's error text, without the leading '-' and the CRLF.
	Reply string
}

func (e *ProtocolError) Error() string { return e.Reply }

// The refusals, in Redis's words. Next returns these values themselves, so
// errors.Is tells them apart; "expected '$', got 'x'", which names the
// byte, is a ProtocolError of its own each time.
var (
	ErrMultibulkLength       = &ProtocolError{"ERR Protocol error: invalid multibulk length"}
	ErrBulkLength            = &ProtocolError{"ERR Protocol error: invalid bulk length"}
	ErrInlineTooBig          = &ProtocolError{"ERR Protocol error: too big inline request"}
	ErrUnbalancedQuotes      = &ProtocolError{"ERR Protocol error: unbalanced quotes in request"}
	ErrUnauthMultibulkLength = &ProtocolError{"ERR Protocol error: unauthenticated multibulk length"}
	ErrUnauthBulkLength      = &ProtocolError{"ERR Protocol error: unauthenticated bulk length"}
)

// expectedBulk is Redis's refusal of a byte other than '$' where an
// argument's header begins. Redis's error replies carry no CR or LF, so
// those read as a space.
func expectedBulk(c byte) *ProtocolError {
	if c == '\r' || c == '\n' {
		c = ' '
	}
	return &ProtocolError{"ERR Protocol error: expected '$', got '" + string([]byte{c}) + "'"}
}

// ErrQueryBufferLimit is the refusal of a command whose framing announces
// more than Limits.MaxQueryLen bytes. Redis closes such a connection without
// a reply, and logs it.
var ErrQueryBufferLimit = errors.New("resp: command over the query buffer limit")
