package server

import "strings"

// What an error reply is: its kind, which the error counters count it under
// (redcell_errors_total{kind}, INFO Errorstats) without reading its text,
// and its text. Every reply's text is declared with the others' (errNoAuth
// and the rest), in one place.

// errKind is what an error reply is counted as.
type errKind uint8

// Error kinds, for redcell_errors_total{kind} and INFO Errorstats.
const (
	errKindUnknownCommand errKind = iota // ERR unknown command or subcommand
	errKindWrongArity                    // ERR wrong number of arguments
	errKindCommand                       // any other ERR from a command: bad arguments, refused settings
	errKindProtocol                      // malformed RESP: the connection is closed
	errKindNoAuth                        // NOAUTH
	errKindWrongPass                     // WRONGPASS
	errKindWrongType                     // WRONGTYPE
	errKindNoProto                       // NOPROTO
	errKindExecAbort                     // EXECABORT
	errKindMisconf                       // MISCONF
	errKindOOM                           // OOM
	errKindReadOnly                      // READONLY: a write to a replica
	errKindNoMasterLink                  // NOMASTERLINK
	errKindNoPerm                        // NOPERM: refused by the user's ACL rules
	errKindNoReplicas                    // NOREPLICAS: too few replicas acknowledging (min-replicas-to-write)
	errKindMoved                         // MOVED, ASK, TRYAGAIN, CLUSTERDOWN, CROSSSLOT: cluster mode's
	errKindAsk
	errKindTryAgain
	errKindClusterDown
	errKindCrossSlot
	errKindInternal // ERR internal error: a command panicked (containPanic)
	errKindOther    // any other prefix
	numErrorKinds
)

// errorKinds names each kind for redcell_errors_total, and gives the prefix
// INFO Errorstats counts it under (the other kind is not shown there) and,
// where the name does not say what is counted, a note for the metric's HELP
// text (errorsHelp). The one list of kinds: what counts and what describes
// the counts both read it.
var errorKinds = [numErrorKinds]struct{ name, prefix, note string }{
	errKindUnknownCommand: {"unknown_command", "ERR", ""},
	errKindWrongArity:     {"wrong_arity", "ERR", ""},
	errKindCommand:        {"command", "ERR", "bad arguments and other ERR"},
	errKindProtocol:       {"protocol", "ERR", "malformed RESP"},
	errKindNoAuth:         {"noauth", "NOAUTH", ""},
	errKindWrongPass:      {"wrongpass", "WRONGPASS", ""},
	errKindWrongType:      {"wrongtype", "WRONGTYPE", ""},
	errKindNoProto:        {"noproto", "NOPROTO", ""},
	errKindExecAbort:      {"execabort", "EXECABORT", ""},
	errKindMisconf:        {"misconf", "MISCONF", ""},
	errKindOOM:            {"oom", "OOM", ""},
	errKindReadOnly:       {"readonly", "READONLY", ""},
	errKindNoMasterLink:   {"nomasterlink", "NOMASTERLINK", ""},
	errKindNoPerm:         {"noperm", "NOPERM", ""},
	errKindNoReplicas:     {"noreplicas", "NOREPLICAS", ""},
	errKindMoved:          {"moved", "MOVED", ""},
	errKindAsk:            {"ask", "ASK", ""},
	errKindTryAgain:       {"tryagain", "TRYAGAIN", ""},
	errKindClusterDown:    {"clusterdown", "CLUSTERDOWN", ""},
	errKindCrossSlot:      {"crossslot", "CROSSSLOT", ""},
	errKindInternal:       {"internal", "ERR", "a command that panicked: its connection is closed"},
	errKindOther:          {"other", "", "any other prefix"},
}

// errorsHelp is redcell_errors_total's HELP text: every kind of errorKinds,
// in its order, with its note.
func errorsHelp() string {
	var b strings.Builder
	b.WriteString("Error replies by kind: ")
	for i, k := range errorKinds {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k.name)
		if k.note != "" {
			b.WriteString(" (" + k.note + ")")
		}
	}
	b.WriteString(".")
	return b.String()
}

// replyError is one error reply: the text sent (without the leading '-'
// and the CRLF) and the kind it is counted as. The zero value is no error,
// which the helpers that may find one return when they find none.
type replyError struct {
	kind errKind
	text string
}

// none reports whether e is the zero value: no error.
func (e replyError) none() bool { return e.text == "" }

// commandError is an ERR reply of a command that ran: bad arguments, or a
// request refused as things stand.
func commandError(text string) replyError { return replyError{errKindCommand, text} }
