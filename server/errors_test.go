package server

import (
	"errors"
	"strings"
	"testing"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/replication"
)

func argv(args ...string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

// errUnknownCommand words the error as Redis 7's processCommand does,
// quoting arguments with "'%.*s' " while fewer than 128 bytes are quoted.
func TestErrUnknownCommand(t *testing.T) {
	x := func(n int) string { return strings.Repeat("x", n) }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"foo"}, "ERR unknown command 'foo', with args beginning with: "},
		{[]string{"foo", "a", "b"}, "ERR unknown command 'foo', with args beginning with: 'a' 'b' "},
		{[]string{"FoO", ""}, "ERR unknown command 'FoO', with args beginning with: '' "},
		// The name is clipped to 128 bytes.
		{[]string{x(200)}, "ERR unknown command '" + x(128) + "', with args beginning with: "},
		// One long argument fills the 128 bytes: later ones are dropped.
		{[]string{"foo", x(200), "next"}, "ERR unknown command 'foo', with args beginning with: '" + x(128) + "' "},
		// 60 + 3 + 60 + 3 = 126 bytes quoted: the third gets the 2 left.
		{[]string{"foo", x(60), x(60), "abcdef", "never"},
			"ERR unknown command 'foo', with args beginning with: '" + x(60) + "' '" + x(60) + "' 'ab' "},
		// Exactly 128 quoted: nothing more.
		{[]string{"foo", x(125), "next"}, "ERR unknown command 'foo', with args beginning with: '" + x(125) + "' "},
		// 127 quoted: the next argument still starts, with room for one byte.
		{[]string{"foo", x(124), "next"}, "ERR unknown command 'foo', with args beginning with: '" + x(124) + "' 'n' "},
	} {
		if got := errUnknownCommand(argv(c.args...)).text; got != c.want {
			t.Errorf("errUnknownCommand(%.40q) =\n %q\nwant\n %q", c.args, got, c.want)
		}
	}
}

func TestErrWrongArgsAndUnknownSubcommand(t *testing.T) {
	if got, want := errWrongArgs("cl.throttle").text, "ERR wrong number of arguments for 'cl.throttle' command"; got != want {
		t.Errorf("errWrongArgs = %q want %q", got, want)
	}
	if got, want := errWrongArgs("client|setname").text, "ERR wrong number of arguments for 'client|setname' command"; got != want {
		t.Errorf("errWrongArgs = %q want %q", got, want)
	}
	if got, want := errUnknownSubcommand([]byte("Frob"), "CLIENT").text, "ERR unknown subcommand 'Frob'. Try CLIENT HELP."; got != want {
		t.Errorf("errUnknownSubcommand = %q want %q", got, want)
	}
	long := strings.Repeat("y", 300)
	if got, want := errUnknownSubcommand([]byte(long), "CONFIG").text, "ERR unknown subcommand '"+long[:128]+"'. Try CONFIG HELP."; got != want {
		t.Errorf("errUnknownSubcommand(300 bytes) = %q want %q", got, want)
	}
}

// everyError is every error reply the package declares, and one of each of
// its constructors.
func everyError() []replyError {
	long := []byte(strings.Repeat("z", 200))
	return []replyError{
		errNoAuth, errHelloNoAuth, errWrongPass, errAuthNoPassword, errNoProto, errHelloProto,
		errMaxClients, errProtected,
		errSyntax, errNotInteger, errNotFloat, errDBIndex, errInvalidCursor, errWrongType, errOOM, errShardFull, errMisconf,
		errBurstNotInteger, errCountNotInteger, errPeriodNotInteger, errQuantityNotInteger,
		errNegativeBurst, errNegativeCount, errNegativePeriod, errZeroRate, errNegativeQuantity, errOutOfRange,
		errMaxWaitNotInteger, errNegativeMaxWait,
		errLimitNotInteger, errWindowNotInteger, errPrecisionNotInteger, errLimitPositive, errWindowPositive,
		errPrecisionRange, errLimitTooLarge,
		errGCRABurst, errGCRARange, errGCRAPeriod, errGCRAMissingTokens, errGCRAOverflowTokens, errGCRAOverflowBurst,
		errMultiNested, errExecWithoutMulti, errDiscardWithoutMulti, errWatchInMulti, errNotInMulti, errExecAbort,
		errMonitorInExec,
		errClientName, errNoSuchClient, errInvalidClientID, errKillClientID, errKillMaxAgeInteger,
		errTrackingOneRedirect, errTrackingNoRedirect, errTrackingPrefixNoBcast, errTrackingSwitchBcast,
		errTrackingOptBcast, errTrackingOptinOptout, errTrackingSwitchOpt, errCachingNotTracking,
		errCachingYesNotOptin, errCachingNoNotOptout, errPrefixOverlap("a", "ab", true), errPrefixOverlap("a", "ab", false),
		errKillMaxAge, errPauseMode, errTimeoutInteger, errTimeoutNegative, errTimeoutRange, errMonitorKeyspace,
		errMonitorNoConn, errNoLFU, errGetKeysNoCommand, errGetKeysNoKeys, errGetKeysArity,
		errShutdownSave, errNoPersistence, errBgsaveInProgress, errConfigSet, errSlowlogCount,
		errKeyTooLong(0, 0), errKeyTooLong(9, 8), errSaveFailed(errors.New("storage: disk full")),
		errHelloOption(long), errSetinfoOption(long), errSetinfoValue([]byte("LIB-NAME")),
		errUnknownClientType(long), errNoSuchUser(long), errSubcommandSyntax(long, "CLIENT"),
		errWrongArgs("get"), errUnknownCommand(argv("foo", "a")), errUnknownSubcommand(long, "CLIENT"),
		errReadOnly, errNoReplication, errInvalidMasterPort, errInvalidPort, errWaitOnReplica, errReplicaNoConn,
		errNoFailover, errFailoverTimeout, errFailoverInProgress, errFailoverOnReplica, errFailoverNoReplicas,
		errFailoverForce, errFailoverNotReplica, errFailoverNotOnline, errUnrecognizedReplconf(long),
		errReplication(errors.New("NOMASTERLINK Can't SYNC while not connected with my master")),
		errReplication(replication.ErrFailoverReplID), errNoConfigFile, errConfigValue("replica-priority", "x"), errConfigYesNo("protected-mode"),
		errRewrite(errors.New("disk full")),
		errCrossSlot, errTryAgain, errSlotUnserved, errNotInCluster, errClusterDisabled, errInvalidSlot,
		errInvalidKeyCount, errNotAMaster, errInvalidVersion, errSlotsInExec,
		errMoved("MOVED", 1, &cluster.Node{IP: "127.0.0.1", Port: 1}), errMoved("ASK", 1, &cluster.Node{IP: "127.0.0.1", Port: 1}),
		errUnknownNode(long), clusterError(errors.New("cluster: x")), errNotMySlot(1), errNotImporting(1),
	}
}

// Every error reply carries a Redis prefix and fits on one line.
func TestErrorTextsHaveAPrefix(t *testing.T) {
	for _, e := range everyError() {
		prefix, _, _ := strings.Cut(e.text, " ")
		if prefix != strings.ToUpper(prefix) || prefix == "" || strings.ContainsAny(e.text, "\r\n") {
			t.Errorf("%q: want an upper-case prefix word and a single line", e.text)
		}
	}
}

// Each error's kind is the one its text shows, as a client sorting replies
// would count them: the prefix (ERR, NOAUTH, WRONGPASS, WRONGTYPE, NOPROTO;
// any other is "other"), and among ERR replies an unknown command or
// subcommand, a wrong number of arguments, or a command's own refusal.
func TestErrorKindsAgreeWithTheirTexts(t *testing.T) {
	for _, e := range everyError() {
		prefix, rest, _ := strings.Cut(e.text, " ")
		want := errKindOther
		for k, info := range errorKinds {
			if info.prefix == prefix && errKind(k) != errKindProtocol {
				want = errKind(k)
				break
			}
		}
		if prefix == "ERR" {
			switch {
			case strings.HasPrefix(rest, "unknown command"), strings.HasPrefix(rest, "unknown subcommand"):
				want = errKindUnknownCommand
			case strings.HasPrefix(rest, "wrong number of arguments"):
				want = errKindWrongArity
			default:
				want = errKindCommand
			}
		}
		if e.kind != want {
			t.Errorf("%.60q: kind %s want %s", e.text, errorKinds[e.kind].name, errorKinds[want].name)
		}
	}
}

// The zero replyError is none; every declared one is some.
func TestReplyErrorNone(t *testing.T) {
	if !(replyError{}).none() {
		t.Error("the zero replyError is not none")
	}
	for _, e := range everyError() {
		if e.none() {
			t.Errorf("%+v is none", e)
		}
	}
}

func TestErrorKind(t *testing.T) {
	for _, c := range []struct {
		err  replyError
		want errKind
	}{
		{errUnknownCommand(argv("FOO", "a")), errKindUnknownCommand},
		{errUnknownSubcommand([]byte("x"), "C"), errKindUnknownCommand},
		{errSubcommandSyntax([]byte("x"), "C"), errKindUnknownCommand},
		{errWrongArgs("get"), errKindWrongArity},
		{errNegativeBurst, errKindCommand},
		{errSyntax, errKindCommand},
		{errHelloProto, errKindCommand},
		{errNoAuth, errKindNoAuth},
		{errWrongPass, errKindWrongPass},
		{errWrongType, errKindWrongType},
		{errNoProto, errKindNoProto},
		{errExecAbort, errKindExecAbort},
		{errMisconf, errKindMisconf},
		{errOOM, errKindOOM},
		{errReadOnly, errKindReadOnly},
		{errCrossSlot, errKindCrossSlot},
		{errTryAgain, errKindTryAgain},
		{errSlotUnserved, errKindClusterDown},
	} {
		if c.err.kind != c.want {
			t.Errorf("%q: kind %s want %s", c.err.text, errorKinds[c.err.kind].name, errorKinds[c.want].name)
		}
	}
}
