package clusternode

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/internal/statecodec"
	"github.com/redcell/redcell/storage"
)

// migrating is node A, serving every slot, with the peer f a master
// without slots in the topology at version 1, and keys of a slot A serves,
// each with a state.
func migrating(t *testing.T, f *fakePeer, nkeys int) (a *testNode, slot int, keys []string) {
	t.Helper()
	a = newTestNode(t, idA)
	a.setTopology(t, 1, idA+" 7001 master - 0-16383", f.id+" "+strconv.Itoa(f.port)+" master -")
	slot = cluster.Slot([]byte("bar"))
	keys = slotKeys(slot, nkeys)
	for _, k := range keys {
		require.NoError(t, a.store.decide(k, later(time.Hour)))
	}
	return a, slot, keys
}

// What changes between the copies is sent again, and a key deleted is sent
// deleted (KEY key ""): the destination ends with the slot's last state.
func TestMigrateSendsChangesAndDeletionsBetweenCopies(t *testing.T) {
	first, resume := make(chan struct{}), make(chan struct{})
	var keyCmds atomic.Int64
	f := startFakePeer(t, idF, func(args []string) string {
		if args[3] == "KEY" && keyCmds.Add(1) == 1 {
			close(first) // the first copy is taken: change the slot now
			<-resume
		}
		return "+OK\r\n"
	})
	a, slot, keys := migrating(t, f, 20)
	done, err := a.m.Migrate(slot, f.id)
	require.NoError(t, err)
	<-first
	require.True(t, a.store.Delete([]byte(keys[1]), later(0)))
	require.NoError(t, a.store.decide(keys[2], later(2*time.Hour)))
	close(resume)
	require.NoError(t, <-done)

	sent := map[string][]string{} // each key's values, in order
	var ops []string
	for _, args := range f.drain() {
		ops = append(ops, args[3])
		if args[3] == "KEY" {
			sent[args[4]] = append(sent[args[4]], args[5])
		}
	}
	require.Equal(t, "START", ops[0])
	require.Equal(t, "DONE", ops[len(ops)-1])
	require.Len(t, sent[keys[1]], 2)
	require.Equal(t, "", sent[keys[1]][1], "deleted after the first copy")
	require.Len(t, sent[keys[2]], 2)
	require.NotEqual(t, sent[keys[2]][0], sent[keys[2]][1], "changed after the first copy")
	require.Equal(t, string(statecodec.Encode(storage.Change{Key: keys[2], TAT: later(2 * time.Hour)})), sent[keys[2]][1])
	require.Len(t, sent[keys[3]], 1, "unchanged: sent once")
	require.Equal(t, int64(len(keys)+2), keyCmds.Load(), "every key once, then the two changes")
}

// The last copy is taken in the hold of the shard's lock that freezes the
// slot (CopySlot with freeze), never by a freeze and then a copy, between
// which a decision could slip in; the slot stays frozen while the last
// difference and DONE are answered, and is sent ASK once they are.
func TestMigrateFreezesTheSlotWithItsLastCopy(t *testing.T) {
	type seen struct {
		phase  int32
		frozen bool
		route  cluster.Route
		err    error // a decision's
	}
	var a *testNode
	var slot int
	var keys []string
	atDone := make(chan seen, 1)
	f := startFakePeer(t, idF, func(args []string) string {
		if args[3] == "DONE" {
			r, _ := a.st.Route(slot, false, false, false)
			atDone <- seen{a.st.Move(slot).Phase.Load(), a.store.isFrozen(slot), r, a.store.decide(keys[0], later(time.Minute))}
		}
		return "+OK\r\n"
	})
	a, slot, keys = migrating(t, f, 5)
	a.store.takeCalls()
	done, err := a.m.Migrate(slot, f.id)
	require.NoError(t, err)
	require.NoError(t, <-done)

	s := strconv.Itoa(slot)
	require.Equal(t, []string{"copy " + s, "copy and freeze " + s}, a.store.takeCalls())
	require.Equal(t, seen{cluster.Frozen, true, cluster.TryAgain, storage.ErrSlotFrozen}, <-atDone)
	mv := a.st.Move(slot)
	require.Equal(t, int32(cluster.Asking), mv.Phase.Load())
	r, node := a.st.Route(slot, false, false, false)
	require.Equal(t, cluster.Ask, r)
	require.Equal(t, f.id, node.ID)
	require.True(t, a.store.isFrozen(slot), "frozen until a topology gives the slot away")
	ch, _ := a.store.get(keys[0])
	require.Equal(t, later(time.Hour), ch.TAT, "nothing decided while frozen")
}

// A migration that fails, wherever it fails, leaves the slot served here
// with its state: the slot is thawed and served here first, the
// destination then told ABORT (after what it was sent, on the same
// connection), and the move ends last, so no second migration of the slot
// starts before the destination has let its copy go. A later migration
// moves it.
func TestMigrateThatFailsLeavesTheSlotHere(t *testing.T) {
	for _, c := range []struct {
		name   string
		at     string // the command the destination fails at
		answer string // its answer there; "" dies
		want   string // the error's end
		abort  bool   // the destination reads ABORT
	}{
		{"refused at DONE", "DONE", "-ERR no room for the slot\r\n", ": ERR no room for the slot", true},
		{"dies at START", "START", "", ": EOF", false},
		{"dies copying", "KEY", "", ": EOF", false},
		{"dies at DONE", "DONE", "", ": EOF", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			type seen struct {
				frozen bool
				phase  int32
				moving bool
				again  string // a second MIGRATE's error
			}
			var a *testNode
			var slot int
			atAbort := make(chan seen, 1)
			f := startFakePeer(t, idF, func(args []string) string {
				switch args[3] {
				case c.at:
					return c.answer
				case "ABORT":
					mv := a.st.Move(slot)
					_, err := a.m.Migrate(slot, idB)
					atAbort <- seen{a.store.isFrozen(slot), mv.Phase.Load(), mv == a.st.Move(slot), err.Error()}
				}
				return "+OK\r\n"
			})
			good := startFakePeer(t, idB, ok)
			a = newTestNode(t, idA)
			a.setTopology(t, 1, idA+" 7001 master - 0-16383", f.id+" "+strconv.Itoa(f.port)+" master -",
				good.id+" "+strconv.Itoa(good.port)+" master -")
			slot = cluster.Slot([]byte("bar"))
			keys := slotKeys(slot, 5)
			for _, k := range keys {
				require.NoError(t, a.store.decide(k, later(time.Hour)))
			}

			done, err := a.m.Migrate(slot, f.id)
			require.NoError(t, err)
			err = <-done
			require.ErrorContains(t, err, "cluster: slot "+strconv.Itoa(slot)+" to "+f.id+" at 127.0.0.1:"+strconv.Itoa(f.port)+": ")
			require.True(t, strings.HasSuffix(err.Error(), c.want), err.Error())
			if c.at == "DONE" {
				require.ErrorContains(t, err, ": frozen for ")
			}
			var got []string
			for _, args := range f.drain() {
				got = append(got, args[3])
			}
			require.Equal(t, "START", got[0])
			if c.abort {
				require.Equal(t, []string{c.at, "ABORT"}, got[len(got)-2:])
				require.Equal(t, seen{false, cluster.Copying, true, "cluster: slot " + strconv.Itoa(slot) + " is already moving"}, <-atAbort)
			} else {
				require.Equal(t, c.at, got[len(got)-1], "%v", got)
			}

			require.Nil(t, a.st.Move(slot), "the move is over")
			require.False(t, a.store.isFrozen(slot), "the slot thawed")
			r, _ := a.st.Route(slot, false, false, false)
			require.Equal(t, cluster.Local, r)
			for _, k := range keys {
				ch, ok := a.store.get(k)
				require.True(t, ok, k)
				require.Equal(t, later(time.Hour), ch.TAT, k)
			}
			done, err = a.m.Migrate(slot, good.id)
			require.NoError(t, err)
			require.NoError(t, <-done)
			var moved int
			for _, args := range good.drain() {
				if args[3] == "KEY" {
					moved++
				}
			}
			require.Equal(t, len(keys), moved)
		})
	}
}

// A migration starts only for a slot this node serves, to another master
// of the topology, and not while the slot moves already; a refused one
// contacts no one.
func TestMigrateRefuses(t *testing.T) {
	f := startFakePeer(t, idF, ok)
	a := newTestNode(t, idA)
	slot := cluster.Slot([]byte("bar"))
	_, err := a.m.Migrate(slot, f.id)
	require.ErrorIs(t, err, ErrNotOwner, "no topology yet")

	a.setTopology(t, 1, idA+" 7001 master - 0-8191", idB+" 7002 master - 8192-16383",
		idF+" "+strconv.Itoa(f.port)+" slave "+idB)
	_, err = a.m.Migrate(10000, idB)
	require.ErrorIs(t, err, ErrNotOwner, "B's slot")
	for _, id := range []string{idF, idA, strings.Repeat("c", 40)} {
		_, err = a.m.Migrate(slot, id)
		require.ErrorIs(t, err, ErrUnknownNode, "a replica, this node, an unknown node")
	}
	require.NoError(t, a.st.StartMove(&cluster.Move{Slot: slot, Out: true}))
	_, err = a.m.Migrate(slot, idB)
	require.EqualError(t, err, "cluster: slot "+strconv.Itoa(slot)+" is already moving")
	require.Empty(t, f.drain())
	require.Empty(t, a.store.takeCalls())
}

// A command on a frozen slot waits for the freeze to end (AwaitThaw), up
// to migrateFrozenWait; on a slot not moving it does not wait.
func TestAwaitThaw(t *testing.T) {
	a := newTestNode(t, idA)
	require.True(t, a.m.AwaitThaw(7), "not moving")
	mv := &cluster.Move{Slot: 7, Out: true}
	require.NoError(t, a.st.StartMove(mv))
	require.True(t, a.m.AwaitThaw(7), "copying")

	mv.Freeze()
	thawed := make(chan bool)
	go func() { thawed <- a.m.AwaitThaw(7) }()
	mv.Thaw(cluster.Asking)
	require.True(t, <-thawed)

	mv.Freeze()
	began := time.Now()
	require.False(t, a.m.AwaitThaw(7), "never thawed")
	require.GreaterOrEqual(t, time.Since(began), migrateFrozenWait)
}
