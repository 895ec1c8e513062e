package protocol_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// waitsOnPause waits until CLIENT LIST shows client id's command cmd
// waiting, flags=b as Redis shows a postponed client.
func waitsOnPause(t *testing.T, observer *rawConn, id int64, cmd string) {
	t.Helper()
	want := "id=" + strconv.FormatInt(id, 10) + " "
	require.Eventually(t, func() bool {
		for _, line := range strings.Split(observer.do("CLIENT", "LIST"), "\n") {
			if strings.Contains(line, want) {
				return strings.Contains(line, " flags=b ") && strings.Contains(line, " cmd="+cmd+" ")
			}
		}
		return false
	}, 10*time.Second, time.Millisecond, "client %d waiting on the pause with %s", id, cmd)
}

// CLIENT PAUSE WRITE holds the write commands of every other client until
// CLIENT UNPAUSE, and lets their reads through; the client that paused is
// not held, so it can unpause.
func TestClientPauseWrite(t *testing.T) {
	ts := startServer(t)
	pauser, writer, reader := ts.raw(t), ts.raw(t), ts.raw(t)
	writerID := clientID(t, writer)

	require.Equal(t, ok, pauser.do("CLIENT", "PAUSE", "60000", "WRITE"))
	writer.write(command("CL.THROTTLE", "k", "4", "1", "1") + command("PING"))
	waitsOnPause(t, reader, writerID, "cl.throttle")
	require.Equal(t, null2, reader.do("GET", "k"), "the held write has not run")
	require.Equal(t, integer(0), reader.do("EXISTS", "k"), "reads are not held")
	require.Equal(t, ints(0, 5, 4, -1, 1), pauser.do("CL.THROTTLE", "p", "4", "1", "1"), "the pauser's writes are not held")

	require.Equal(t, ok, pauser.do("CLIENT", "UNPAUSE"))
	require.Equal(t, ints(0, 5, 4, -1, 1), writer.read(), "the held write runs once unpaused")
	require.Equal(t, simple("PONG"), writer.read(), "then the rest of its pipeline")
	require.Equal(t, integer(1), reader.do("EXISTS", "k"))
	require.Equal(t, ok, pauser.do("CLIENT", "UNPAUSE"), "UNPAUSE with no pause is OK")
	require.Equal(t, ints(0, 5, 3, -1, 2), writer.do("CL.THROTTLE", "k", "4", "1", "1"))
}

// CLIENT PAUSE ALL (the default) holds every command of every other client,
// CLIENT UNPAUSE from another client included, as Redis does; a WRITE pause
// or a shorter one does not weaken an ALL pause in force.
func TestClientPauseAll(t *testing.T) {
	ts := startServer(t)
	pauser, a, b := ts.raw(t), ts.raw(t), ts.raw(t)
	idA, idB := clientID(t, a), clientID(t, b)

	require.Equal(t, ok, pauser.do("CLIENT", "PAUSE", "60000"))
	require.Equal(t, ok, pauser.do("CLIENT", "PAUSE", "10", "WRITE"))
	a.write(command("PING"))
	waitsOnPause(t, pauser, idA, "ping")
	b.write(command("CLIENT", "UNPAUSE"))
	waitsOnPause(t, pauser, idB, "client")
	require.Equal(t, simple("PONG"), pauser.do("PING"))

	require.Equal(t, ok, pauser.do("CLIENT", "UNPAUSE"))
	require.Equal(t, simple("PONG"), a.read())
	require.Equal(t, ok, b.read())
	require.Equal(t, simple("PONG"), b.do("PING"))

	require.Equal(t, ok, pauser.do("CLIENT", "PAUSE", "0"), "PAUSE 0 pauses nothing")
	require.Equal(t, simple("PONG"), a.do("PING"))
}

// A pause ends by itself when its timeout has passed on the server's clock.
func TestClientPauseTimesOut(t *testing.T) {
	ts := startServer(t)
	pauser, w := ts.raw(t), ts.raw(t)
	idW := clientID(t, w)
	require.Equal(t, ok, pauser.do("CLIENT", "PAUSE", "100", "ALL"))
	w.write(command("CL.THROTTLE", "k", "4", "1", "1"))
	waitsOnPause(t, pauser, idW, "cl.throttle")
	ts.Clock.Advance(100 * time.Millisecond)
	// It runs at the clock's reading when the pause ended: the key's TAT is
	// one emission interval after it.
	require.Equal(t, ints(0, 5, 4, -1, 1), w.read())
	require.Equal(t, bulk(strconv.FormatInt(t0.Add(100*time.Millisecond+time.Second).UnixNano(), 10)), w.do("GET", "k"))
	require.Equal(t, simple("PONG"), w.do("PING"), "nothing is paused any more")
}

// A client killed while its command waits on a pause runs nothing more and
// gets nothing more.
func TestClientKilledWhilePaused(t *testing.T) {
	ts := startServer(t)
	pauser, w := ts.raw(t), ts.raw(t)
	idW := clientID(t, w)
	require.Equal(t, ok, pauser.do("CLIENT", "PAUSE", "60000", "WRITE"))
	w.write(command("CL.THROTTLE", "k", "4", "1", "1"))
	waitsOnPause(t, pauser, idW, "cl.throttle")
	require.Equal(t, integer(1), pauser.do("CLIENT", "KILL", "ID", strconv.FormatInt(idW, 10)))
	w.expectClosed()
	require.Equal(t, ok, pauser.do("CLIENT", "UNPAUSE"))
	require.Equal(t, integer(0), pauser.do("EXISTS", "k"), "the killed client's write never ran")
}

// CLIENT PAUSE's arguments are checked as Redis checks them: the mode first,
// then the timeout.
func TestClientPauseErrors(t *testing.T) {
	ts := startServer(t)
	c := ts.raw(t)
	for _, e := range []struct {
		args []string
		want string
	}{
		{[]string{"CLIENT", "PAUSE"}, "ERR wrong number of arguments for 'client|pause' command"},
		{[]string{"CLIENT", "PAUSE", "x"}, "ERR timeout is not an integer or out of range"},
		{[]string{"CLIENT", "PAUSE", "1.5"}, "ERR timeout is not an integer or out of range"},
		{[]string{"CLIENT", "PAUSE", "-1"}, "ERR timeout is negative"},
		{[]string{"CLIENT", "PAUSE", "9223372036854775807"}, "ERR timeout is out of range"},
		{[]string{"CLIENT", "PAUSE", "x", "READ"}, "ERR CLIENT PAUSE mode must be WRITE or ALL"},
		{[]string{"CLIENT", "PAUSE", "10", "ALL", "x"}, "ERR unknown subcommand or wrong number of arguments for 'PAUSE'. Try CLIENT HELP."},
		{[]string{"CLIENT", "UNPAUSE", "now"}, "ERR wrong number of arguments for 'client|unpause' command"},
	} {
		require.Equal(t, errReply(e.want), c.do(e.args...), "%q", e.args)
	}
	other := ts.raw(t)
	require.Equal(t, simple("PONG"), other.do("PING"), "no refused PAUSE paused anything")
}
