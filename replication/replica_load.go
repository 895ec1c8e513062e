package replication

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/statecodec"
	"github.com/redcell/redcell/rdb"
)

// How a replica loads its master's snapshot: the RDB that follows
// +FULLRESYNC, sent with its length or streamed ($EOF:).

// load reads the snapshot that follows +FULLRESYNC and makes it the store's
// whole content, the stream beginning at start under id.
func (u *upstream) load(conn net.Conn, br *bufio.Reader, id string, start int64) error {
	n := u.n
	head, err := u.readLine(br)
	if err != nil {
		return err
	}
	// The snapshot comes with its length ($<bytes>), or streamed as it is
	// written and ended by a mark ($EOF:<40 bytes>), as Redis's diskless
	// sync and a redcell master send it to a replica that said capa eof.
	// Either way its reader reads br itself, and no further than the RDB
	// goes, so that what follows is the stream (or the mark).
	var body io.Reader = br
	var mark string
	size := int64(-1)
	if m, ok := strings.CutPrefix(head, "$EOF:"); ok {
		if len(m) != eofMarkLen {
			return fmt.Errorf("a snapshot announced as %.60q: its end mark must be %d bytes", head, eofMarkLen)
		}
		mark = m
	} else {
		if !strings.HasPrefix(head, "$") {
			return fmt.Errorf("a snapshot announced as %.60q", head)
		}
		if size, err = strconv.ParseInt(head[1:], 10, 64); err != nil || size < 0 {
			return fmt.Errorf("a snapshot announced as %.60q", head)
		}
		body = io.LimitReader(br, size)
	}
	rd, err := rdb.NewReader(body, rdb.ReaderOptions{})
	if err != nil {
		return err
	}
	now := gcra.InstantOf(n.cfg.Now())
	// streamMu is not held while the snapshot arrives, which takes as long
	// as the master and the network make it: INFO and ROLE (Status) take
	// it. Nothing else writes the store or the stream meanwhile, and no
	// replica of this node may sync from it (linked is false).
	//
	// The old content goes first, so that a key the master no longer holds
	// goes too (a peek meanwhile sees the snapshot as far as it is loaded:
	// it errs toward allowing).
	n.store.Clear()
	keys, skipped := 0, 0
	for {
		e, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		kind, exp, state, err := statecodec.Decode(e.Value)
		if err != nil || exp <= now {
			skipped++
			continue
		}
		if err := n.store.Apply(e.Key, kind, exp, state); err != nil {
			return err
		}
		keys++
	}
	if mark != "" {
		got := make([]byte, len(mark))
		if _, err := io.ReadFull(br, got); err != nil {
			return err
		}
		if string(got) != mark {
			return fmt.Errorf("a streamed snapshot ended with %.60q, not its mark", got)
		}
	} else if _, err := io.Copy(io.Discard, body); err != nil {
		return err
	}
	n.streamMu.Lock()
	n.replID, n.replID2, n.offset2 = id, "", -1
	n.backlog.reset(start)
	n.backlog.append(nil)
	n.streamMu.Unlock()
	n.hasStream.Store(true)
	u.linked.Store(true)
	n.log.Info("replication: loaded the master's snapshot", "master", addr(u.host, u.port),
		"keys", keys, "skipped", skipped, "bytes", size, "streamed", mark != "", "offset", start)
	return nil
}

// eofMarkLen is the length of a streamed snapshot's end mark (Redis's
// RDB_EOF_MARK_SIZE).
const eofMarkLen = 40
