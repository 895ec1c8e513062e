package protocol_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
)

// waitsOnPause waits until CLIENT LIST shows client id's command cmd
// waiting, flags=b as Redis shows a postponed client.
func waitsOnPause(t *testing.T, observer *testkit.Conn, id int64, cmd string) {
	t.Helper()
	want := "id=" + strconv.FormatInt(id, 10) + " "
	require.Eventually(t, func() bool {
		for _, line := range strings.Split(observer.Do("CLIENT", "LIST"), "\n") {
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
	ts := harness.StartServer(t)
	pauser, writer, reader := ts.Raw(t), ts.Raw(t), ts.Raw(t)
	writerID := clientID(t, writer)

	require.Equal(t, testkit.OK, pauser.Do("CLIENT", "PAUSE", "60000", "WRITE"))
	writer.Write(testkit.Command("CL.THROTTLE", "k", "4", "1", "1") + testkit.Command("PING"))
	waitsOnPause(t, reader, writerID, "cl.throttle")
	require.Equal(t, testkit.Null2, reader.Do("GET", "k"), "the held write has not run")
	require.Equal(t, testkit.Int(0), reader.Do("EXISTS", "k"), "reads are not held")
	require.Equal(t, testkit.Ints(0, 5, 4, -1, 1), pauser.Do("CL.THROTTLE", "p", "4", "1", "1"), "the pauser's writes are not held")

	require.Equal(t, testkit.OK, pauser.Do("CLIENT", "UNPAUSE"))
	require.Equal(t, testkit.Ints(0, 5, 4, -1, 1), writer.Read(), "the held write runs once unpaused")
	require.Equal(t, testkit.Simple("PONG"), writer.Read(), "then the rest of its pipeline")
	require.Equal(t, testkit.Int(1), reader.Do("EXISTS", "k"))
	require.Equal(t, testkit.OK, pauser.Do("CLIENT", "UNPAUSE"), "UNPAUSE with no pause is OK")
	require.Equal(t, testkit.Ints(0, 5, 3, -1, 2), writer.Do("CL.THROTTLE", "k", "4", "1", "1"))
}

// CLIENT PAUSE ALL (the default) holds every command of every other client,
// CLIENT UNPAUSE from another client included, as Redis does; a WRITE pause
// or a shorter one does not weaken an ALL pause in force.
func TestClientPauseAll(t *testing.T) {
	ts := harness.StartServer(t)
	pauser, a, b := ts.Raw(t), ts.Raw(t), ts.Raw(t)
	idA, idB := clientID(t, a), clientID(t, b)

	require.Equal(t, testkit.OK, pauser.Do("CLIENT", "PAUSE", "60000"))
	require.Equal(t, testkit.OK, pauser.Do("CLIENT", "PAUSE", "10", "WRITE"))
	a.Write(testkit.Command("PING"))
	waitsOnPause(t, pauser, idA, "ping")
	b.Write(testkit.Command("CLIENT", "UNPAUSE"))
	waitsOnPause(t, pauser, idB, "client")
	require.Equal(t, testkit.Simple("PONG"), pauser.Do("PING"))

	require.Equal(t, testkit.OK, pauser.Do("CLIENT", "UNPAUSE"))
	require.Equal(t, testkit.Simple("PONG"), a.Read())
	require.Equal(t, testkit.OK, b.Read())
	require.Equal(t, testkit.Simple("PONG"), b.Do("PING"))

	require.Equal(t, testkit.OK, pauser.Do("CLIENT", "PAUSE", "0"), "PAUSE 0 pauses nothing")
	require.Equal(t, testkit.Simple("PONG"), a.Do("PING"))
}

// A pause ends by itself when its timeout has passed on the server's clock.
func TestClientPauseTimesOut(t *testing.T) {
	ts := harness.StartServer(t)
	pauser, w := ts.Raw(t), ts.Raw(t)
	idW := clientID(t, w)
	require.Equal(t, testkit.OK, pauser.Do("CLIENT", "PAUSE", "100", "ALL"))
	w.Write(testkit.Command("CL.THROTTLE", "k", "4", "1", "1"))
	waitsOnPause(t, pauser, idW, "cl.throttle")
	ts.Clock.Advance(100 * time.Millisecond)
	// It runs at the clock's reading when the pause ended: the key's TAT is
	// one emission interval after it.
	require.Equal(t, testkit.Ints(0, 5, 4, -1, 1), w.Read())
	require.Equal(t, testkit.Bulk(strconv.FormatInt(harness.T0.Add(100*time.Millisecond+time.Second).UnixNano(), 10)), w.Do("GET", "k"))
	require.Equal(t, testkit.Simple("PONG"), w.Do("PING"), "nothing is paused any more")
}

// A client killed while its command waits on a pause runs nothing more and
// gets nothing more.
func TestClientKilledWhilePaused(t *testing.T) {
	ts := harness.StartServer(t)
	pauser, w := ts.Raw(t), ts.Raw(t)
	idW := clientID(t, w)
	require.Equal(t, testkit.OK, pauser.Do("CLIENT", "PAUSE", "60000", "WRITE"))
	w.Write(testkit.Command("CL.THROTTLE", "k", "4", "1", "1"))
	waitsOnPause(t, pauser, idW, "cl.throttle")
	require.Equal(t, testkit.Int(1), pauser.Do("CLIENT", "KILL", "ID", strconv.FormatInt(idW, 10)))
	w.ExpectClosed()
	require.Equal(t, testkit.OK, pauser.Do("CLIENT", "UNPAUSE"))
	require.Equal(t, testkit.Int(0), pauser.Do("EXISTS", "k"), "the killed client's write never ran")
}

// CLIENT PAUSE's arguments are checked as Redis checks them: the mode first,
// then the timeout.
func TestClientPauseErrors(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	testkit.RunSteps(t, []testkit.Step{
		{Args: []string{"CLIENT", "PAUSE"}, Want: testkit.Err("ERR wrong number of arguments for 'client|pause' command")},
		{Args: []string{"CLIENT", "PAUSE", "x"}, Want: testkit.Err("ERR timeout is not an integer or out of range")},
		{Args: []string{"CLIENT", "PAUSE", "1.5"}, Want: testkit.Err("ERR timeout is not an integer or out of range")},
		{Args: []string{"CLIENT", "PAUSE", "-1"}, Want: testkit.Err("ERR timeout is negative")},
		{Args: []string{"CLIENT", "PAUSE", "9223372036854775807"}, Want: testkit.Err("ERR timeout is out of range")},
		{Args: []string{"CLIENT", "PAUSE", "x", "READ"}, Want: testkit.Err("ERR CLIENT PAUSE mode must be WRITE or ALL")},
		{Args: []string{"CLIENT", "PAUSE", "10", "ALL", "x"}, Want: testkit.Err("ERR unknown subcommand or wrong number of arguments for 'PAUSE'. Try CLIENT HELP.")},
		{Args: []string{"CLIENT", "UNPAUSE", "now"}, Want: testkit.Err("ERR wrong number of arguments for 'client|unpause' command")},
	}, c.Do, nil)
	other := ts.Raw(t)
	require.Equal(t, testkit.Simple("PONG"), other.Do("PING"), "no refused PAUSE paused anything")
}
