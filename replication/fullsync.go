package replication

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/statecodec"
	"github.com/redcell/redcell/rdb"
	"github.com/redcell/redcell/storage"
)

// A full resynchronization: the snapshot a master sends a replica that
// cannot continue its stream, as an RDB a real redis-server loads.

// fullSync sends +FULLRESYNC and a snapshot, then the stream from the
// snapshot's offset.
func (l *Link) fullSync(psync bool) {
	n := l.n
	// The snapshot is of the store as it is from off on, written shard by
	// shard in two phases: the shard copied under its lock, then written
	// with the lock released, its copy let go before the next shard's is
	// made. A change made after off, to a shard copied or not yet, is in
	// the stream after off as well: the feed takes it after off, and a
	// replica's own stream appends what it applied after. The stream
	// carries states, so a key the copy has newer than a state of the
	// stream is set to the older one and then to the newer again, as the
	// replica catches up; its last state is the master's.
	n.streamMu.Lock()
	_, off := n.backlog.offsets()
	n.backlog.append(nil) // allocated: the link reads from off on
	h := n.backlog.hold(off, l.lost)
	defer n.backlog.release(h)
	id := n.replID
	n.streamMu.Unlock()
	var buf []storage.Change
	copyShard := func(i int) []storage.Change {
		buf = n.store.CopyShard(i, gcra.InstantOf(n.cfg.Now()), buf[:0])
		return buf
	}
	shards, keys := n.store.Shards(), n.store.Len() // keys: RESIZEDB's hint
	// A replica that reads a streamed snapshot (every redcell and Redis
	// replica of version 2.8.18 on) gets it as it is written, after
	// "$EOF:<mark>" and ended by the mark, so that the master never holds
	// the whole RDB; the old SYNC gets it with its length, which needs it
	// whole first.
	l.state.Store("send_bulk")
	head := []byte{}
	if psync {
		head = fmt.Appendf(head, "+FULLRESYNC %s %d\r\n", id, off)
	}
	// Streamed, the RDB goes through a buffer to the connection, after
	// its head; with its length, it is written whole first.
	var whole bytes.Buffer
	var bw *bufio.Writer
	var w io.Writer = &whole
	mark := ""
	if l.eof {
		mark = newReplID()
		bw = bufio.NewWriterSize(linkWriter{l}, 64<<10)
		_, _ = fmt.Fprintf(bw, "%s$EOF:%s\r\n", head, mark)
		w = bw
	}
	rdbBytes := &countingWriter{w: w}
	err := writeSnapshot(rdbBytes, shards, copyShard, keys, id, off, n.cfg.Now())
	switch {
	case err != nil:
	case l.eof:
		_, _ = bw.WriteString(mark)
		err = bw.Flush()
	default:
		if err = l.write(fmt.Appendf(head, "$%d\r\n", whole.Len())); err == nil {
			err = l.write(whole.Bytes())
		}
	}
	if err != nil {
		l.fail(err)
		return
	}
	n.log.Info("replication: full resynchronization sent", "replica", addr(l.ip, l.port), "bytes", rdbBytes.n, "offset", off,
		"streamed", l.eof)
	l.state.Store("online")
	l.acked.Store(off)
	n.RefreshGoodReplicas()
	l.stream(h, nil)
}

// writeSnapshot writes the keys copyShard copies of each of shards shards
// as an RDB a real redis-server loads; keys is RESIZEDB's hint of how many.
func writeSnapshot(w io.Writer, shards int, copyShard func(i int) []storage.Change, keys int, replID string, offset int64, now time.Time) error {
	aux := []rdb.Aux{
		{Key: "redis-ver", Value: "7.2.0"},
		{Key: "redis-bits", Value: "64"},
		{Key: "ctime", Value: strconv.FormatInt(now.Unix(), 10)},
		{Key: "used-mem", Value: "0"},
		{Key: "repl-stream-db", Value: "0"},
		{Key: "repl-id", Value: replID},
		{Key: "repl-offset", Value: strconv.FormatInt(offset, 10)},
		{Key: "aof-base", Value: "0"},
	}
	wr, err := rdb.NewWriter(w, aux, keys, keys)
	if err != nil {
		return err
	}
	for i := range shards {
		for _, ch := range copyShard(i) {
			e := rdb.Entry{Key: []byte(ch.Key), Value: statecodec.Encode(ch), ExpireAtMs: expireAtMs(ch.TAT)}
			if err := wr.Write(e); err != nil {
				return err
			}
		}
	}
	return wr.Close()
}

// linkWriter writes to a link's connection, each write with the link's
// timeout.
type linkWriter struct{ l *Link }

func (w linkWriter) Write(p []byte) (int, error) {
	_ = w.l.conn.SetWriteDeadline(time.Now().Add(w.l.n.cfg.Timeout))
	return w.l.conn.Write(p)
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	k, err := c.w.Write(p)
	c.n += int64(k)
	return k, err
}
