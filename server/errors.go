package server

import (
	"errors"
	"strconv"
	"strings"

	"redcell/storage"
)

// Client-facing error texts, in one place. Each carries its Redis prefix and,
// where Redis has one, Redis's exact wording, so clients that match on error
// text behave as they do against Redis.
const (
	errNoAuth         = "NOAUTH Authentication required."
	errHelloNoAuth    = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"
	errWrongPass      = "WRONGPASS invalid username-password pair or user is disabled."
	errAuthNoPassword = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	errNoProto        = "NOPROTO unsupported protocol version"
	errSyntax         = "ERR syntax error"
	errNotInteger     = "ERR value is not an integer or out of range"
	errDBIndex        = "ERR DB index is out of range"
	errInvalidCursor  = "ERR invalid cursor"
	errClientName     = "ERR Client names cannot contain spaces, newlines or special characters."
	errNoSuchClient   = "ERR No such client"
	errTracking       = "ERR client tracking is not supported by redcell; connect with client-side caching disabled (rueidis: DisableCache: true)"
	errShutdownSave   = "ERR Errors trying to SHUTDOWN. Check logs."
	errNoPersistence  = "ERR persistence is not configured"

	errBgsaveInProgress = "ERR Background save already in progress"
	// errMisconf is Redis's answer to a write it cannot persist
	// (stop-writes-on-bgsave-error), in redcell's terms: durable mode
	// refuses changes while flushes fail.
	errMisconf = "MISCONF redcell is configured to persist every change before replying (--flush-interval 0), but it is currently unable to persist to disk. Commands that may modify the data set are disabled until a flush succeeds. Please check the redcell logs for details about the error."

	// CL.THROTTLE, SPEC.md section 1.
	errBurstNotInteger    = "ERR max_burst is not an integer or out of range"
	errCountNotInteger    = "ERR count is not an integer or out of range"
	errPeriodNotInteger   = "ERR period is not an integer or out of range"
	errQuantityNotInteger = "ERR quantity is not an integer or out of range"
	errNegativeBurst      = "ERR max_burst must not be negative"
	errNegativeCount      = "ERR count must be positive"
	errNegativePeriod     = "ERR period must be positive"
	errZeroRate           = "ERR zero rates are not supported"
	errNegativeQuantity   = "ERR quantity must not be negative"
	errOutOfRange         = "ERR rate limit parameters out of range"

	// CL.RESERVE's MAXWAIT, in CL.THROTTLE's words.
	errMaxWaitNotInteger = "ERR MAXWAIT is not an integer or out of range"
	errNegativeMaxWait   = "ERR MAXWAIT must not be negative"

	// CL.WINDOW, in CL.THROTTLE's words.
	errLimitNotInteger     = "ERR limit is not an integer or out of range"
	errWindowNotInteger    = "ERR window is not an integer or out of range"
	errPrecisionNotInteger = "ERR PRECISION is not an integer or out of range"
	errLimitPositive       = "ERR limit must be positive"
	errWindowPositive      = "ERR window must be positive"
	errPrecisionRange      = "ERR PRECISION must be between 0 and 10000"
	errLimitTooLarge       = "ERR limit too large for an exact window, use PRECISION"

	// GCRA, in the words of Redis's src/gcra.c and its argument helpers.
	errGCRABurst          = "ERR value is out of range, must be positive"
	errGCRARange          = "ERR value is out of range, value must between 1 and 9223372036854775807"
	errNotFloat           = "ERR value is not a valid float"
	errGCRAPeriod         = "ERR period must be > 0 and < 1e12"
	errGCRAMissingTokens  = "ERR Missing TOKENS value"
	errGCRAOverflowTokens = "ERR GCRA limiting uses microsecond accuracy. Combination of period, tokens_per_period and TOKENS would cause an overflow"
	errGCRAOverflowBurst  = "ERR GCRA limiting uses microsecond accuracy. Combination of period, tokens_per_period and max_burst would cause an overflow"

	errWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"

	// Transactions, in Redis's words.
	errMultiNested         = "ERR MULTI calls can not be nested"
	errExecWithoutMulti    = "ERR EXEC without MULTI"
	errDiscardWithoutMulti = "ERR DISCARD without MULTI"
	errWatchInMulti        = "ERR WATCH inside MULTI is not allowed"
	errNotInMulti          = "ERR Command not allowed inside a transaction"
	errExecAbort           = "EXECABORT Transaction discarded because of previous errors."
	errMonitorInExec       = "ERR MONITOR isn't allowed for DENY BLOCKING client"

	// Keys that cannot be created.
	errOOM       = "OOM command not allowed when used memory > 'maxmemory'."
	errShardFull = "OOM command not allowed: the key's shard holds the most keys a shard can (4294967294); start redcell with more --shards"

	// CLIENT KILL and PAUSE, MONITOR, OBJECT: Redis 7's texts.
	errKillClientID      = "ERR client-id should be greater than 0"
	errKillMaxAgeInteger = "ERR maxage is not an integer or out of range"
	errKillMaxAge        = "ERR maxage should be greater than 0"
	errPauseMode         = "ERR CLIENT PAUSE mode must be WRITE or ALL"
	errTimeoutInteger    = "ERR timeout is not an integer or out of range"
	errTimeoutNegative   = "ERR timeout is negative"
	errTimeoutRange      = "ERR timeout is out of range"
	errMonitorKeyspace   = "ERR Replica can't interact with the keyspace"
	errMonitorNoConn     = "ERR MONITOR needs a network connection"
	errNoLFU             = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."

	// errAuthLimited answers AUTH from an address that has failed too
	// often (authlimit.go); Redis has no such limit, so no wording of its.
	errAuthLimited = "ERR too many failed AUTH attempts, try later"
)

// errKeyTooLong refuses a key name longer than --max-key-len; n and max are
// given when known.
func errKeyTooLong(n, max int) string {
	if max == 0 {
		return "ERR key too long"
	}
	return "ERR key too long: " + strconv.Itoa(n) + " bytes, --max-key-len is " + strconv.Itoa(max)
}

// storageErrorText maps the errors of a decision in storage to their client
// text: a key that cannot be created, or that holds another kind of state.
func storageErrorText(err error) string {
	switch {
	case errors.Is(err, storage.ErrWrongType):
		return errWrongType
	case errors.Is(err, storage.ErrOOM):
		return errOOM
	case errors.Is(err, storage.ErrFull):
		return errShardFull
	case errors.Is(err, storage.ErrKeyTooLong):
		return errKeyTooLong(0, 0)
	default:
		return "ERR " + strings.TrimPrefix(err.Error(), "storage: ")
	}
}

// errSaveFailed is SAVE's answer when the flush failed: the reason, without
// the storage package's prefix.
func errSaveFailed(err error) string {
	return "ERR " + strings.TrimPrefix(err.Error(), "storage: ")
}

// errUnknownClientType words a bad CLIENT LIST or KILL TYPE as Redis does.
func errUnknownClientType(name []byte) string {
	return "ERR Unknown client type '" + string(clip(name, 128)) + "'"
}

// errNoSuchUser words CLIENT KILL USER of an unknown user as Redis does.
func errNoSuchUser(name []byte) string {
	return "ERR No such user '" + string(clip(name, 128)) + "'"
}

// errSubcommandSyntax is Redis's addReplySubcommandSyntaxError: a known
// subcommand whose arguments its handler cannot take.
func errSubcommandSyntax(sub []byte, command string) string {
	return "ERR unknown subcommand or wrong number of arguments for '" + string(clip(sub, 128)) + "'. Try " + command + " HELP."
}

// errWrongArgs is Redis's arity error for the command's lower-case full name,
// e.g. "cl.throttle" or "client|setname".
func errWrongArgs(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

// errUnknownCommand words an unknown command as Redis 7 does, quoting the
// name and as many arguments as fit in 128 bytes.
func errUnknownCommand(args [][]byte) string {
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
	return "ERR unknown command '" + string(clip(args[0], 128)) + "', with args beginning with: " + string(quoted)
}

// errUnknownSubcommand words an unknown subcommand as Redis 7 does.
func errUnknownSubcommand(sub []byte, command string) string {
	return "ERR unknown subcommand '" + string(clip(sub, 128)) + "'. Try " + command + " HELP."
}

func clip(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
