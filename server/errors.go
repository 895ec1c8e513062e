package server

import (
	"errors"
	"os"
	"strconv"
	"strings"

	"github.com/redcell/redcell/acl"
	"github.com/redcell/redcell/admission"
	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/clusternode"
	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/replication"
	"github.com/redcell/redcell/storage"
	"github.com/redcell/redcell/window"
)

// Client-facing error replies, every one of them, in one place: this file is
// long on purpose, a table of texts read side by side with Redis's, which a
// split by topic would scatter. Each is a
// replyError: its text, with its Redis prefix and, where Redis has one,
// Redis's exact wording, so clients that match on error text behave as they
// do against Redis; and its kind, which the error counters
// (redcell_errors_total{kind}, INFO Errorstats) count it under without
// reading the text. Packages below server return sentinel errors; the
// functions at the end of this file turn them into these replies.
//
// Input the RESP reader refuses is answered with package resp's texts
// (resp.ProtocolError) and counted as errKindProtocol when the connection
// ends.

// Authentication and the protocol.
var (
	errNoAuth         = replyError{errKindNoAuth, "NOAUTH Authentication required."}
	errHelloNoAuth    = replyError{errKindNoAuth, "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"}
	errWrongPass      = replyError{errKindWrongPass, "WRONGPASS invalid username-password pair or user is disabled."}
	errAuthNoPassword = commandError("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
	errNoProto        = replyError{errKindNoProto, "NOPROTO unsupported protocol version"}
	errHelloProto     = commandError("ERR Protocol version is not an integer or out of range")
	// errMaxClients is Redis's answer to a connection beyond maxclients.
	// It is sent before the connection is served, so no counter sees it.
	errMaxClients = commandError("ERR max number of clients reached")
	// errProtected is Redis 7's answer to a connection from another host
	// while protected mode is on and the default user has no password
	// (clientAcceptHandler), word for word; sent as errMaxClients is.
	errProtected = replyError{errKindOther, "DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. " +
		"In this mode connections are only accepted from the loopback interface. " +
		"If you want to connect from external computers to Redis you may adopt one of the following solutions: " +
		"1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis " +
		"from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. " +
		"Use CONFIG REWRITE to make this change permanent. " +
		"2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode " +
		"option to 'no', and then restarting the server. " +
		"3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. " +
		"4) Set up an authentication password for the default user. " +
		"NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside."}
)

// errInternal answers a command that panicked (containPanic), naming it;
// the connection is closed after it. Redis has no such error: it would
// have crashed.
func errInternal(command string) replyError {
	return replyError{errKindInternal, "ERR internal error while running '" + command + "': the connection is closed, the server serves on (see its log)"}
}

// ACLs (users, cmdACL), in Redis 7.2's words.
var (
	errNoPermKey     = replyError{errKindNoPerm, "NOPERM No permissions to access a key"}
	errNoPermChannel = replyError{errKindNoPerm, "NOPERM No permissions to access a channel"}
	errDeleteDefault = commandError("ERR The 'default' user cannot be removed")
	errBadUsername   = commandError("ERR Usernames can't contain spaces or null characters")
	// errNoACLFile is Redis's first sentence; its advice (CONFIG REWRITE
	// to store users in the config file) is redcell's: there is no config
	// file to store them in.
	errNoACLFile  = commandError("ERR This Redis instance is not configured to use an ACL file. Start redcell with --aclfile <file> to keep the users ACL SETUSER defines (ACL SAVE) and to load them (ACL LOAD).")
	errACLSave    = commandError("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
	errGenpassArg = commandError("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")
)

// errNoPermCommand is Redis's refusal of a command the user's rules do not
// allow, naming the command by its full name ("client|kill").
func errNoPermCommand(user, command string) replyError {
	return replyError{errKindNoPerm, "NOPERM User " + user + " has no permissions to run the '" + command + "' command"}
}

// errNoPermInExec is EXEC's answer, in its reply, for a queued command the
// user's rules no longer allow: they changed after it was queued.
func errNoPermInExec(reason acl.Reason) replyError {
	why := "no permission"
	switch reason {
	case acl.DeniedCommand:
		why = "no permission to execute the command or subcommand"
	case acl.DeniedKey:
		why = "no permission to touch the specified keys"
	case acl.DeniedChannel:
		why = "no permission to access one of the channels used as arguments"
	}
	return replyError{errKindNoPerm, "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: " + why}
}

// aclDenial is ACL DRYRUN's answer for a refusal, as Redis words it there
// (a reply, not an error): the key or channel named.
func aclDenial(user, command string, reason acl.Reason, arg []byte) string {
	switch reason {
	case acl.DeniedKey:
		return "User " + user + " has no permissions to access the '" + string(arg) + "' key"
	case acl.DeniedChannel:
		return "User " + user + " has no permissions to access the '" + string(arg) + "' channel"
	}
	return "User " + user + " has no permissions to run the '" + command + "' command"
}

// aclRuleReason is why a rule could not be applied, as Redis's
// ACLSetUserStringError words it.
func aclRuleReason(err error) string {
	switch {
	case errors.Is(err, acl.ErrUnknownCommand):
		return "Unknown command or category name in ACL"
	case errors.Is(err, acl.ErrSyntax):
		return "Syntax error"
	case errors.Is(err, acl.ErrPatternAfterAllKeys):
		return "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
	case errors.Is(err, acl.ErrPatternAfterAllChannels):
		return "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"
	case errors.Is(err, acl.ErrNoSuchPassword):
		return "The password you are trying to remove from the user does not exist"
	case errors.Is(err, acl.ErrBadHash):
		return "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
	case errors.Is(err, acl.ErrFirstArgOfSubcommand):
		return "Allowing first-arg of a subcommand is not supported"
	}
	return "Wrong format"
}

// errACLRule is ACL SETUSER's answer for a rule it could not apply.
func errACLRule(err error) replyError {
	var re *acl.RuleError
	if !errors.As(err, &re) {
		return commandError("ERR " + err.Error())
	}
	if errors.Is(err, acl.ErrUnmatchedParen) {
		return commandError("ERR Unmatched parenthesis in acl selector starting at '" + re.Op + "'.")
	}
	return commandError("ERR Error in ACL SETUSER modifier '" + re.Op + "': " + aclRuleReason(re.Err))
}

// errACLFileOpen is ACL LOAD's answer, and the start's error, for an ACL
// file that cannot be read.
func errACLFileOpen(path string, err error) replyError {
	why := err.Error()
	var pe *os.PathError
	if errors.As(err, &pe) {
		why = pe.Err.Error() // strerror's words, as Redis's
		why = strings.ToUpper(why[:1]) + why[1:]
	}
	return commandError("ERR Error loading ACLs, opening file '" + path + "': " + why)
}

// errACLFile is ACL LOAD's answer, and the start's error, for an ACL file
// with errors: every line's, in Redis's words, then its warning that
// nothing changed.
func errACLFile(path string, errs []acl.LineError) replyError {
	var b strings.Builder
	b.WriteString("ERR ")
	at := func(e acl.LineError) string { return path + ":" + strconv.Itoa(e.Line) }
	for _, e := range errs {
		switch {
		case errors.Is(e.Err, acl.ErrNoUserKeyword):
			b.WriteString(at(e) + " should start with user keyword followed by the username. ")
		case errors.Is(e.Err, acl.ErrBadUsername):
			b.WriteString("'" + at(e) + ": username '" + e.Name + "' contains invalid characters. ")
		case errors.Is(e.Err, acl.ErrDuplicateUser):
			b.WriteString("WARNING: Duplicate user '" + e.Name + "' found on line " + strconv.Itoa(e.Line) + ". ")
		case errors.Is(e.Err, acl.ErrUnmatchedParen):
			b.WriteString(at(e) + ": Unmatched parenthesis in selector definition.")
		case errors.Is(e.Err, acl.ErrUnknownCommand):
			b.WriteString(at(e) + ": Error in applying operation '" + e.Op + "': " + aclRuleReason(e.Err) + ". ")
		default:
			b.WriteString(at(e) + ": " + aclRuleReason(e.Err) + ". ")
		}
	}
	b.WriteString("WARNING: ACL errors detected, no change to the previously active ACL rules was performed")
	return commandError(b.String())
}

// errUnknownCategory is ACL CAT's answer for a category Redis does not have.
func errUnknownCategory(name []byte) replyError {
	return commandError("ERR Unknown category '" + string(clip(name, 128)) + "'")
}

// errNoSuchUserDryRun and errNoSuchCommandDryRun are ACL DRYRUN's answers
// for a user or a command there is not.
func errNoSuchUserDryRun(name []byte) replyError {
	return commandError("ERR User '" + string(name) + "' not found")
}

func errNoSuchCommandDryRun(name []byte) replyError {
	return commandError("ERR Command '" + string(name) + "' not found")
}

// Arguments any command may take, and the keyspace.
var (
	errSyntax        = commandError("ERR syntax error")
	errNotInteger    = commandError("ERR value is not an integer or out of range")
	errNotFloat      = commandError("ERR value is not a valid float")
	errDBIndex       = commandError("ERR DB index is out of range")
	errInvalidCursor = commandError("ERR invalid cursor")
	errWrongType     = replyError{errKindWrongType, "WRONGTYPE Operation against a key holding the wrong kind of value"}
	// Keys that cannot be created.
	errOOM       = replyError{errKindOOM, admission.OOM.Text()}
	errShardFull = replyError{errKindOOM, "OOM command not allowed: the key's shard holds the most keys a shard can (4294967294); start redcell with more --shards"}
	// errMisconf is Redis's answer to a write it cannot persist
	// (stop-writes-on-bgsave-error), in redcell's terms: durable mode
	// refuses changes while flushes fail. Its text, as the other
	// admission refusals', is package admission's, which every front
	// shares (refusalError).
	errMisconf = replyError{errKindMisconf, admission.Misconf.Text()}
)

// CL.THROTTLE's arguments, worded in Redis's conventions where redis-cell
// answers "Cell error: ..." or wraps (docs/commands.md, "Differences
// from redis-cell"); CL.RESERVE takes the same.
var (
	errBurstNotInteger    = commandError("ERR max_burst is not an integer or out of range")
	errCountNotInteger    = commandError("ERR count is not an integer or out of range")
	errPeriodNotInteger   = commandError("ERR period is not an integer or out of range")
	errQuantityNotInteger = commandError("ERR quantity is not an integer or out of range")
	errNegativeBurst      = commandError("ERR max_burst must not be negative")
	errNegativeCount      = commandError("ERR count must be positive")
	errNegativePeriod     = commandError("ERR period must be positive")
	errZeroRate           = commandError("ERR zero rates are not supported")
	errNegativeQuantity   = commandError("ERR quantity must not be negative")
	errOutOfRange         = commandError("ERR rate limit parameters out of range")
)

// CL.RESERVE's MAXWAIT, in CL.THROTTLE's words.
var (
	errMaxWaitNotInteger = commandError("ERR MAXWAIT is not an integer or out of range")
	errNegativeMaxWait   = commandError("ERR MAXWAIT must not be negative")
)

// CL.WINDOW, in CL.THROTTLE's words.
var (
	errLimitNotInteger     = commandError("ERR limit is not an integer or out of range")
	errWindowNotInteger    = commandError("ERR window is not an integer or out of range")
	errPrecisionNotInteger = commandError("ERR PRECISION is not an integer or out of range")
	errLimitPositive       = commandError("ERR limit must be positive")
	errWindowPositive      = commandError("ERR window must be positive")
	errPrecisionRange      = commandError("ERR PRECISION must be between 0 and 10000")
	errLimitTooLarge       = commandError("ERR limit too large for an exact window, use PRECISION")
)

// GCRA, in the words of Redis's src/gcra.c and its argument helpers.
var (
	errGCRABurst          = commandError("ERR value is out of range, must be positive")
	errGCRARange          = commandError("ERR value is out of range, value must between 1 and 9223372036854775807")
	errGCRAPeriod         = commandError("ERR period must be > 0 and < 1e12")
	errGCRAMissingTokens  = commandError("ERR Missing TOKENS value")
	errGCRAOverflowTokens = commandError("ERR GCRA limiting uses microsecond accuracy. Combination of period, tokens_per_period and TOKENS would cause an overflow")
	errGCRAOverflowBurst  = commandError("ERR GCRA limiting uses microsecond accuracy. Combination of period, tokens_per_period and max_burst would cause an overflow")
)

// Transactions, in Redis's words.
var (
	errMultiNested         = commandError("ERR MULTI calls can not be nested")
	errExecWithoutMulti    = commandError("ERR EXEC without MULTI")
	errDiscardWithoutMulti = commandError("ERR DISCARD without MULTI")
	errWatchInMulti        = commandError("ERR WATCH inside MULTI is not allowed")
	errNotInMulti          = commandError("ERR Command not allowed inside a transaction")
	errExecAbort           = replyError{errKindExecAbort, "EXECABORT Transaction discarded because of previous errors."}
	errMonitorInExec       = commandError("ERR MONITOR isn't allowed for DENY BLOCKING client")
)

// CLIENT, MONITOR, OBJECT and COMMAND: Redis 7's texts.
var (
	errClientName        = commandError("ERR Client names cannot contain spaces, newlines or special characters.")
	errNoSuchClient      = commandError("ERR No such client")
	errInvalidClientID   = commandError("ERR Invalid client ID")
	errKillClientID      = commandError("ERR client-id should be greater than 0")
	errKillMaxAgeInteger = commandError("ERR maxage is not an integer or out of range")
	errKillMaxAge        = commandError("ERR maxage should be greater than 0")
	errPauseMode         = commandError("ERR CLIENT PAUSE mode must be WRITE or ALL")
	errTimeoutInteger    = commandError("ERR timeout is not an integer or out of range")
	errTimeoutNegative   = commandError("ERR timeout is negative")
	errTimeoutRange      = commandError("ERR timeout is out of range")
	errMonitorKeyspace   = commandError("ERR Replica can't interact with the keyspace")
	errMonitorNoConn     = errNoNetwork("MONITOR")
	errNoLFU             = commandError("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
	errGetKeysNoCommand  = commandError("ERR Invalid command specified")
	errGetKeysNoKeys     = commandError("ERR The command has no key arguments")
	errGetKeysArity      = commandError("ERR Invalid number of arguments specified for command")
)

// The server's settings and persistence.
var (
	errShutdownSave     = commandError("ERR Errors trying to SHUTDOWN. Check logs.")
	errNoPersistence    = commandError("ERR persistence is not configured")
	errBgsaveInProgress = commandError("ERR Background save already in progress")
	errConfigSet        = commandError("ERR CONFIG SET is not supported by redcell for this parameter: settings are command-line flags")
	errNoConfigFile     = commandError("ERR The server is running without a config file")
	errSlowlogCount     = commandError("ERR count should be greater than or equal to -1")
)

// errNoNetwork refuses a command that streams to its connection (MONITOR,
// SUBSCRIBE) on one without a network, which cannot have an outbox: only tests make
// such connections.
func errNoNetwork(command string) replyError {
	return commandError("ERR " + command + " needs a network connection")
}

// errSubscribedContext is Redis's answer to a command a client subscribed
// under RESP2 may not run, naming it by its lower-case full name.
func errSubscribedContext(name string) replyError {
	return commandError("ERR Can't execute '" + name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
}

// errKeyTooLong refuses a key name longer than --max-key-len; n and max are
// given when known.
func errKeyTooLong(n, max int) replyError {
	if max == 0 {
		return commandError(admission.KeyTooLong.Text())
	}
	return commandError(admission.KeyTooLongText(n, max))
}

// refusalError is the reply of a decision admission refused
// (admission.Gate.Admit), for a key of keyLen bytes.
func (s *Server) refusalError(r admission.Refusal, keyLen int) replyError {
	switch r {
	case admission.KeyTooLong:
		return errKeyTooLong(keyLen, s.gate.MaxKeyLen)
	case admission.ReadOnly:
		return errReadOnly
	case admission.NoReplicas:
		return errNoReplicas
	}
	return errMisconf
}

// errSaveFailed is SAVE's answer when the flush failed: the reason, without
// the storage package's prefix.
func errSaveFailed(err error) replyError {
	return commandError("ERR " + strings.TrimPrefix(err.Error(), "storage: "))
}

// errHelloOption words a HELLO option HELLO cannot take as Redis does.
func errHelloOption(opt []byte) replyError {
	return commandError("ERR Syntax error in HELLO option '" + string(clip(opt, 128)) + "'")
}

// errSetinfoOption words an unknown CLIENT SETINFO attribute as Redis does.
func errSetinfoOption(attr []byte) replyError {
	return commandError("ERR Unrecognized option '" + string(clip(attr, 128)) + "'")
}

// errSetinfoValue words a CLIENT SETINFO value with a space or a special
// character as Redis does, naming the attribute as the client sent it.
func errSetinfoValue(attr []byte) replyError {
	return commandError("ERR " + string(clip(attr, 128)) + " cannot contain spaces, newlines or special characters.")
}

// errUnknownClientType words a bad CLIENT LIST or KILL TYPE as Redis does.
func errUnknownClientType(name []byte) replyError {
	return commandError("ERR Unknown client type '" + string(clip(name, 128)) + "'")
}

// CLIENT TRACKING and CLIENT CACHING: Redis 7's texts.
var (
	errTrackingOneRedirect   = commandError("ERR A client can only redirect to a single other client")
	errTrackingNoRedirect    = commandError("ERR The client ID you want redirect to does not exist")
	errTrackingPrefixNoBcast = commandError("ERR PREFIX option requires BCAST mode to be enabled")
	errTrackingSwitchBcast   = commandError("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
	errTrackingOptBcast      = commandError("ERR OPTIN and OPTOUT are not compatible with BCAST")
	errTrackingOptinOptout   = commandError("ERR You can't specify both OPTIN mode and OPTOUT mode")
	errTrackingSwitchOpt     = commandError("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
	errCachingNotTracking    = commandError("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
	errCachingYesNotOptin    = commandError("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
	errCachingNoNotOptout    = commandError("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
)

// errPrefixOverlap words BCAST prefixes that overlap as Redis does: with
// one the client had (existing), or with another of the same command. As
// Redis formats them with %s, a prefix ends at its first NUL byte.
func errPrefixOverlap(prefix, other string, existing bool) replyError {
	cut := func(s string) string {
		if i := strings.IndexByte(s, 0); i >= 0 {
			return s[:i]
		}
		return s
	}
	with := "another provided"
	if existing {
		with = "an existing"
	}
	return commandError("ERR Prefix '" + cut(prefix) + "' overlaps with " + with + " prefix '" + cut(other) + "'. Prefixes for a single client must not overlap.")
}

// errNoSuchUser words CLIENT KILL USER of an unknown user as Redis does.
func errNoSuchUser(name []byte) replyError {
	return commandError("ERR No such user '" + string(clip(name, 128)) + "'")
}

// errSubcommandSyntax is Redis's addReplySubcommandSyntaxError: a known
// subcommand whose arguments its handler cannot take. It is counted as an
// unknown subcommand, as its wording begins.
func errSubcommandSyntax(sub []byte, command string) replyError {
	return replyError{errKindUnknownCommand, "ERR unknown subcommand or wrong number of arguments for '" + string(clip(sub, 128)) + "'. Try " + command + " HELP."}
}

// errWrongArgs is Redis's arity error for the command's lower-case full name,
// e.g. "cl.throttle" or "client|setname".
func errWrongArgs(name string) replyError {
	return replyError{errKindWrongArity, "ERR wrong number of arguments for '" + name + "' command"}
}

// errUnknownCommand words an unknown command as Redis 7 does, quoting the
// name and as many arguments as fit in 128 bytes.
func errUnknownCommand(args [][]byte) replyError {
	var quoted []byte
	for _, a := range args[1:] {
		if len(quoted) >= 128 {
			break
		}
		// As Redis's sdscatprintf(args, "'%.*s' ", 128-sdslen(args), arg).
		room := 128 - len(quoted)
		quoted = append(quoted, '\'')
		quoted = append(quoted, clip(a, room)...)
		quoted = append(quoted, "' "...)
	}
	return replyError{errKindUnknownCommand, "ERR unknown command '" + string(clip(args[0], 128)) + "', with args beginning with: " + string(quoted)}
}

// errUnknownSubcommand words an unknown subcommand as Redis 7 does.
func errUnknownSubcommand(sub []byte, command string) replyError {
	return replyError{errKindUnknownCommand, "ERR unknown subcommand '" + string(clip(sub, 128)) + "'. Try " + command + " HELP."}
}

func clip(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// storageError maps the errors of a decision in storage to their reply: a
// key that cannot be created, or that holds another kind of state.
func storageError(err error) replyError {
	switch {
	case errors.Is(err, storage.ErrWrongType):
		return errWrongType
	case errors.Is(err, storage.ErrOOM):
		return errOOM
	case errors.Is(err, storage.ErrFull):
		return errShardFull
	case errors.Is(err, storage.ErrKeyTooLong):
		return errKeyTooLong(0, 0)
	case errors.Is(err, storage.ErrSlotFrozen):
		return errTryAgain // the slot moves: the client retries, by then redirected
	default:
		return commandError("ERR " + strings.TrimPrefix(err.Error(), "storage: "))
	}
}

// throttleError maps gcra's and storage's errors to CL.THROTTLE's and
// CL.RESERVE's replies.
func throttleError(err error) replyError {
	switch {
	case errors.Is(err, gcra.ErrNegativeBurst):
		return errNegativeBurst
	case errors.Is(err, gcra.ErrNegativeCount):
		return errNegativeCount
	case errors.Is(err, gcra.ErrNegativePeriod):
		return errNegativePeriod
	case errors.Is(err, gcra.ErrZeroRate):
		return errZeroRate
	case errors.Is(err, gcra.ErrNegativeQuantity):
		return errNegativeQuantity
	case errors.Is(err, gcra.ErrOutOfRange):
		return errOutOfRange
	default:
		return storageError(err)
	}
}

// gcraError maps the errors of a GCRA decision to Redis's texts: every
// overflow, of the rate's products or of the new TAT, is one of its two.
func gcraError(err error) replyError {
	switch {
	case errors.Is(err, gcra.ErrOverflowBurst):
		return errGCRAOverflowBurst
	case errors.Is(err, gcra.ErrOverflowTokens), errors.Is(err, gcra.ErrOutOfRange):
		return errGCRAOverflowTokens
	default:
		return storageError(err)
	}
}

// windowError maps window's and storage's errors to CL.WINDOW's replies.
func windowError(err error) replyError {
	switch {
	case errors.Is(err, window.ErrLimit):
		return errLimitPositive
	case errors.Is(err, window.ErrWindow):
		return errWindowPositive
	case errors.Is(err, window.ErrQuantity):
		return errNegativeQuantity
	case errors.Is(err, window.ErrPrecision):
		return errPrecisionRange
	case errors.Is(err, window.ErrLimitTooLarge):
		return errLimitTooLarge
	case errors.Is(err, window.ErrOutOfRange):
		return errOutOfRange
	default:
		return storageError(err)
	}
}

// Replication (replicationFamily), in Redis's words where it has them.
var (
	errReadOnly          = replyError{errKindReadOnly, admission.ReadOnly.Text()}
	errNoReplicas        = replyError{errKindNoReplicas, admission.NoReplicas.Text()}
	errNoReplication     = commandError("ERR replication is not configured on this server")
	errInvalidMasterPort = commandError("ERR Invalid master port")
	errInvalidPort       = commandError("ERR value is out of range, must be positive")
	errWaitOnReplica     = commandError("ERR WAIT cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated.")
	errReplicaNoConn     = commandError("ERR PSYNC needs a network connection")

	errNoFailover         = commandError("ERR No failover in progress.")
	errFailoverTimeout    = commandError("ERR FAILOVER timeout must be greater than 0")
	errFailoverInProgress = commandError("ERR FAILOVER already in progress.")
	errFailoverOnReplica  = commandError("ERR FAILOVER is not valid when server is a replica.")
	errFailoverNoReplicas = commandError("ERR FAILOVER requires connected replicas.")
	errFailoverForce      = commandError("ERR FAILOVER with force option requires both a timeout and target HOST and IP.")
	errFailoverNotReplica = commandError("ERR FAILOVER target HOST and PORT is not a replica.")
	errFailoverNotOnline  = commandError("ERR FAILOVER target replica is not online.")
)

// errUnrecognizedReplconf refuses a REPLCONF option, as Redis words it.
func errUnrecognizedReplconf(opt []byte) replyError {
	return commandError("ERR Unrecognized REPLCONF option: " + string(opt))
}

// errReplication is a replication error as a reply: one that begins with
// its own Redis prefix (NOMASTERLINK) keeps it.
func errReplication(err error) replyError {
	if errors.Is(err, replication.ErrFailoverReplID) {
		return commandError("ERR PSYNC FAILOVER replid must match my replid.")
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "NOMASTERLINK ") {
		return replyError{errKindNoMasterLink, msg}
	}
	return commandError("ERR " + strings.TrimPrefix(msg, "replication: "))
}

// errConfigValue refuses a CONFIG SET value, in Redis 7's words.
func errConfigValue(name, val string) replyError {
	return commandError("ERR CONFIG SET failed (possibly related to argument '" + name + "') - argument couldn't be parsed into an integer")
}

// errConfigYesNo refuses a CONFIG SET boolean that is neither yes nor no,
// in Redis 7's words.
func errConfigYesNo(name string) replyError {
	return commandError("ERR CONFIG SET failed (possibly related to argument '" + name + "') - argument must be 'yes' or 'no'")
}

// errConfigRange refuses a CONFIG SET number out of its range, in Redis
// 7's words.
func errConfigRange(name string, lo, hi int64) replyError {
	return commandError("ERR CONFIG SET failed (possibly related to argument '" + name + "') - argument must be between " +
		strconv.FormatInt(lo, 10) + " and " + strconv.FormatInt(hi, 10) + " inclusive")
}

// ErrNoConfigFile is what Config.RewriteConfig returns when there is nowhere
// to write (--in-memory): CONFIG REWRITE answers as a Redis without a
// config file does.
var ErrNoConfigFile = errors.New("server: no config file")

// errRewrite is CONFIG REWRITE's failure.
func errRewrite(err error) replyError {
	if errors.Is(err, ErrNoConfigFile) {
		return errNoConfigFile
	}
	return commandError("ERR Rewriting config file: " + err.Error())
}

// Redis Cluster (clusterFamily), in Redis's words.
var (
	errCrossSlot    = replyError{errKindCrossSlot, "CROSSSLOT Keys in request don't hash to the same slot"}
	errTryAgain     = replyError{errKindTryAgain, "TRYAGAIN Multiple keys request during rehashing of slot"}
	errSlotUnserved = replyError{errKindClusterDown, admission.ClusterDown.Text()}
	errNotInCluster = replyError{errKindClusterDown, "CLUSTERDOWN This node is not part of the cluster topology (CLUSTERX SETNODES)"}
	// errClusterHeld is Redis's text for a cluster that is down, which
	// clients retry: this node has yet to hear its Sentinels say whether
	// it still serves the slot (cluster.Held).
	errClusterHeld     = replyError{errKindClusterDown, "CLUSTERDOWN The cluster is down"}
	errClusterDisabled = commandError("ERR This instance has cluster support disabled")
	errInvalidSlot     = commandError("ERR Invalid or out of range slot")
	errInvalidKeyCount = commandError("ERR Invalid slot or number of keys")
	errNotAMaster      = commandError("ERR The specified node is not a master")
	errInvalidVersion  = commandError("ERR Invalid cluster version")
	errSlotsInExec     = commandError("ERR this CLUSTER subcommand cannot run inside a transaction")
	// errReplicaOfInCluster is Redis's refusal, where no Sentinel decides
	// failovers: the topology pushed says who replicates whom.
	errReplicaOfInCluster = commandError("ERR REPLICAOF not allowed in cluster mode.")
)

// errMoved is a redirect, MOVED or ASK, of slot to node.
func errMoved(kind string, slot int, node *cluster.Node) replyError {
	k := errKindMoved
	if kind == "ASK" {
		k = errKindAsk
	}
	return replyError{k, kind + " " + strconv.Itoa(slot) + " " + node.IP + ":" + strconv.Itoa(node.Port)}
}

// errInvalidSentinelAddr is CLUSTERX SETSENTINELS's answer for an address
// that is not host:port.
func errInvalidSentinelAddr(addr []byte) replyError {
	return commandError("ERR Invalid Sentinel address '" + string(addr) + "': want host:port")
}

// errReplicaOfNotInShard is REPLICAOF, in a cluster whose failovers
// Sentinel decides, of a node that is not of this node's shard.
func errReplicaOfNotInShard(host, port []byte) replyError {
	return commandError("ERR " + string(host) + ":" + string(port) + " is not a node of this node's shard in the cluster topology")
}

// errUnknownNode is CLUSTER REPLICAS's answer for an ID not in the topology.
func errUnknownNode(id []byte) replyError {
	return commandError("ERR Unknown node " + string(id))
}

// clusterError is a refused topology change as a reply.
func clusterError(err error) replyError {
	return commandError("ERR " + strings.TrimPrefix(err.Error(), "cluster: "))
}

// migrationError is a refused or failed migration or import of slot (to
// the node id, for a migration) as a reply.
func migrationError(err error, slot int, id []byte) replyError {
	switch {
	case errors.Is(err, clusternode.ErrNotOwner):
		return errNotMySlot(slot)
	case errors.Is(err, clusternode.ErrUnknownNode):
		return errUnknownNode(id)
	case errors.Is(err, clusternode.ErrNotImporting):
		return errNotImporting(slot)
	}
	return clusterError(err)
}

// errNotMySlot refuses to migrate a slot this node does not serve.
func errNotMySlot(slot int) replyError {
	return commandError("ERR slot " + strconv.Itoa(slot) + " is not served by this node")
}

// errNotImporting refuses a migration's key for a slot not being imported.
func errNotImporting(slot int) replyError {
	return commandError("ERR slot " + strconv.Itoa(slot) + " is not being imported here")
}
