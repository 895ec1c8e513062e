package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/redcell/redcell/gcra"
)

// A CommitLog is durable mode's write path (FlusherOptions.Log): each group
// commit appends its changes to a log file and syncs that one file, which
// costs a write and an fdatasync. Writing them through Pebble instead cost,
// per commit, a search of its memtable for every key and two goroutine
// hand-offs (its commit pipeline and log writer), on the path every durable
// reply waits on. The Flusher applies the logged changes to the backend in
// bulk every CheckpointInterval (a checkpoint), then drops the log files
// they came from; a store opened after a crash applies the files left first.
type CommitLog interface {
	// Log appends changes (prepared: in order, TATs on the wall clock)
	// with saved, the wall-clock instant of the commit, and syncs them:
	// they are durable when it returns nil.
	Log(changes []Change, saved gcra.Instant) error
	// Seal ends the log file being written: later changes go to a new
	// one. It returns a mark for Drop that covers every file sealed.
	Seal() (uint64, error)
	// Drop removes the log files up to mark, once their changes are
	// applied to the backend and synced.
	Drop(mark uint64) error
}

var _ CommitLog = (*PebbleBackend)(nil)

// Commit log files sit beside Pebble's, named commitLogPrefix and a
// sequence number that grows from file to file. Each holds records:
//
//	length  uint32, little-endian: the payload's bytes
//	crc     uint32, little-endian: CRC-32C of the payload
//	payload the file's sequence number (8 bytes, big-endian), saved (8
//	        bytes, big-endian wall-clock nanoseconds), then for each change
//	        its key (uvarint length, bytes) and its stored value as Pebble
//	        holds it (uvarint length, bytes; length 0 is a deletion)
//
// A record is written whole by one write and synced before the commit is
// acknowledged; a record cut short, failing its checksum or of another file
// (see below) ends what is read of its file.
//
// Files are recycled, as Pebble recycles its own logs: the newest file a
// checkpoint retires is kept, renamed commitLogFree and its number, and the
// next file is that one renamed, its records overwritten from the start. An
// overwrite within a file's size is a sync of data alone (fdatasync need not
// write the file's size), which took 125 us here against 195 us for an
// append. The old records left after the new ones name their old file's
// number, which is never used again: a store's numbers grow across restarts
// (commitLog.seq starts past every number its directory names).
const (
	commitLogPrefix = "redcell-commit-"
	commitLogFree   = "redcell-commit-free-"
	commitLogHeader = 8
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// commitLog is the log file being written and the buffer records are encoded
// into. PebbleBackend.lmu guards it.
type commitLog struct {
	file vfs.File // nil: the next Log starts file seq+1
	seq  uint64   // the newest file's number
	off  int64    // where the next record is written in file
	buf  []byte
	val  []byte
}

func commitLogName(seq uint64) string     { return fmt.Sprintf("%s%010d", commitLogPrefix, seq) }
func commitLogFreeName(seq uint64) string { return fmt.Sprintf("%s%010d", commitLogFree, seq) }

// parseSeq parses the number after prefix in a file's name.
func parseSeq(name, prefix string) (uint64, bool) {
	if !strings.HasPrefix(name, prefix) {
		return 0, false
	}
	n, err := strconv.ParseUint(name[len(prefix):], 10, 64)
	return n, err == nil
}

// commitLogFiles lists dir's commit log files, oldest first, and the number
// of its recycled file (commitLogFree), if it has one, removing any older
// recycled file.
func commitLogFiles(fs vfs.FS, dir string) (seqs []uint64, free uint64, err error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, 0, err
	}
	var frees []uint64
	for _, name := range names {
		if n, ok := parseSeq(name, commitLogPrefix); ok {
			seqs = append(seqs, n)
		} else if n, ok := parseSeq(name, commitLogFree); ok {
			frees = append(frees, n)
			free = max(free, n)
		}
	}
	// Two recycled files: a stop between retiring's rename and its
	// removal of the one before. Only the newest is kept.
	for _, n := range frees {
		if n != free {
			_ = fs.Remove(fs.PathJoin(dir, commitLogFreeName(n)))
		}
	}
	slices.Sort(seqs)
	return seqs, free, nil
}

// encodeRecord appends a record of changes to buf.
func (l *commitLog) encodeRecord(changes []Change, saved gcra.Instant) []byte {
	buf := append(l.buf[:0], make([]byte, commitLogHeader)...)
	buf = binary.BigEndian.AppendUint64(buf, l.seq)
	buf = binary.BigEndian.AppendUint64(buf, uint64(saved))
	for _, c := range changes {
		buf = binary.AppendUvarint(buf, uint64(len(c.Key)))
		buf = append(buf, c.Key...)
		if c.TAT == 0 {
			buf = binary.AppendUvarint(buf, 0)
			continue
		}
		l.val = encodeValue(l.val, c)
		buf = binary.AppendUvarint(buf, uint64(len(l.val)))
		buf = append(buf, l.val...)
	}
	payload := buf[commitLogHeader:]
	binary.LittleEndian.PutUint32(buf[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(buf[4:], crc32.Checksum(payload, crcTable))
	l.buf = buf
	return buf
}

// Log appends changes to the commit log and syncs it (CommitLog). It checks
// for room and bounds the write by the stall timeout as Apply does. A write
// or sync that fails ends its file: the next Log starts a new one, so that
// nothing is ever written after a record cut short.
func (p *PebbleBackend) Log(changes []Change, saved gcra.Instant) error {
	p.lmu.Lock()
	defer p.lmu.Unlock()
	l := &p.log
	if err := p.disk.usable(); err != nil {
		return err // a Log stuck past the stall timeout may still own the file
	}
	if l.file == nil {
		l.seq++ // a failed start wastes a number, never reuses one
	}
	rec := l.encodeRecord(changes, saved)
	if err := p.disk.room(int64(len(rec))); err != nil {
		return err
	}
	return p.disk.do(func() error {
		if l.file == nil {
			if err := p.startLogFile(); err != nil {
				return err
			}
		}
		if _, err := l.file.WriteAt(rec, l.off); err != nil {
			l.close()
			return err
		}
		l.off += int64(len(rec))
		if err := l.file.SyncData(); err != nil {
			l.close()
			return err
		}
		return nil
	})
}

// startLogFile opens log file l.seq: the recycled file renamed, or a new one.
// Its name is durable before a record in it is acknowledged.
func (p *PebbleBackend) startLogFile() error {
	fs, l := p.disk.fs, &p.log
	name := fs.PathJoin(p.dir, commitLogName(l.seq))
	p.freeMu.Lock()
	free := p.free
	p.free = 0
	p.freeMu.Unlock()
	var f vfs.File
	err := errors.New("no recycled file")
	if free != 0 {
		if err = fs.Rename(fs.PathJoin(p.dir, commitLogFreeName(free)), name); err == nil {
			f, err = fs.OpenReadWrite(name, vfs.WriteCategoryUnspecified)
		}
	}
	if err != nil { // none, or it is gone: a new file serves as well
		f, err = fs.Create(name, vfs.WriteCategoryUnspecified)
	}
	if err == nil {
		if err = syncDir(fs, p.dir); err != nil {
			_ = f.Close()
		}
	}
	if err != nil {
		return err
	}
	l.file, l.off = f, 0
	return nil
}

// close closes the file being written, whose records are all synced (or
// failed), so that the next Log starts a new one.
func (l *commitLog) close() {
	if l.file != nil {
		_ = l.file.Close()
		l.file = nil
	}
}

// Seal ends the log file being written (CommitLog): every file up to the mark
// returned is complete.
func (p *PebbleBackend) Seal() (uint64, error) {
	p.lmu.Lock()
	defer p.lmu.Unlock()
	// A Log stuck past the stall timeout may still own the file.
	if err := p.disk.usable(); err != nil {
		return 0, err
	}
	p.log.close()
	return p.log.seq, nil
}

// Drop retires the log files up to mark (CommitLog), keeping the newest for
// the next file (commitLogFree).
func (p *PebbleBackend) Drop(mark uint64) error {
	p.freeMu.Lock()
	defer p.freeMu.Unlock()
	cur, free := p.free, uint64(0)
	err := p.disk.do(func() (err error) {
		free, err = retireCommitLogs(p.disk.fs, p.dir, mark, cur)
		return err
	})
	if errors.Is(err, ErrStalled) || errors.Is(err, ErrBroken) {
		// The retiring may still run: what it leaves is found out when
		// the next file starts (startLogFile falls back to a new one).
		return err
	}
	p.free = free
	return err
}

// retireCommitLogs removes the log files up to mark, but for the newest,
// which becomes the recycled file unless the one there (free; 0: none) is
// larger. It returns the recycled file's number, and syncs the directory: a
// retired file must never come back, since its records are older than what
// the store may hold by now.
func retireCommitLogs(fs vfs.FS, dir string, mark, free uint64) (uint64, error) {
	seqs, _, err := commitLogFiles(fs, dir)
	if err != nil {
		return free, err
	}
	i := 0
	for i < len(seqs) && seqs[i] <= mark {
		i++
	}
	seqs = seqs[:i]
	if len(seqs) == 0 {
		return free, nil
	}
	newest := seqs[len(seqs)-1]
	size := func(name string) int64 {
		if fi, err := fs.Stat(fs.PathJoin(dir, name)); err == nil {
			return fi.Size()
		}
		return -1
	}
	keep := free == 0 || size(commitLogName(newest)) > size(commitLogFreeName(free))
	for _, n := range seqs {
		name := fs.PathJoin(dir, commitLogName(n))
		if n == newest && keep {
			if err := fs.Rename(name, fs.PathJoin(dir, commitLogFreeName(n))); err != nil {
				return free, err
			}
			if free != 0 {
				_ = fs.Remove(fs.PathJoin(dir, commitLogFreeName(free)))
			}
			free = n
			continue
		}
		if err := fs.Remove(name); err != nil {
			return free, err
		}
	}
	return free, syncDir(fs, dir)
}

// syncDir syncs a directory, making the names in it durable.
func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// errTornRecord ends the reading of a log file: its last record was cut short
// by a crash, or fails its checksum.
var errTornRecord = errors.New("torn record")

// replayCommitLogs applies the commit log files left in dir (by a crash in
// durable mode) to db, oldest first, syncs them, and retires the files
// (retireCommitLogs, with free the recycled file's number); it returns the
// changes applied and the recycled file's number. The saved instant becomes
// the newest of the store's and the records'. A record cut short ends its
// file's reading: it was never acknowledged.
func replayCommitLogs(db *pebble.DB, fs vfs.FS, dir string, seqs []uint64, free uint64) (int, uint64, error) {
	applied := 0
	var saved gcra.Instant
	if v, closer, err := db.Get([]byte(savedKey)); err == nil {
		if len(v) == 8 {
			saved = gcra.Instant(binary.BigEndian.Uint64(v))
		}
		_ = closer.Close()
	} else if !errors.Is(err, pebble.ErrNotFound) {
		return 0, free, err
	}
	b := db.NewBatch()
	defer b.Close()
	for _, n := range seqs {
		data, err := readAll(fs, fs.PathJoin(dir, commitLogName(n)))
		if err != nil {
			return applied, free, err
		}
		for len(data) > 0 {
			var changes int
			var recSaved gcra.Instant
			var rest []byte
			changes, recSaved, rest, err = applyRecord(b, data, n)
			if errors.Is(err, errTornRecord) {
				break
			}
			if err != nil {
				return applied, free, fmt.Errorf("%s: %w", commitLogName(n), err)
			}
			applied += changes
			saved = max(saved, recSaved)
			data = rest
			if batchFull(b) {
				if err := b.Commit(pebble.NoSync); err != nil {
					return applied, free, err
				}
				b.Reset()
			}
		}
	}
	if err := b.Set([]byte(savedKey), binary.BigEndian.AppendUint64(nil, uint64(saved)), nil); err != nil {
		return applied, free, err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return applied, free, err
	}
	free, err := retireCommitLogs(fs, dir, seqs[len(seqs)-1], free)
	return applied, free, err
}

// applyRecord adds the first record of data, from log file seq, to b, and
// returns its count of changes, its saved instant and the data after it. A
// record of another file (recycled: see commitLogFree) ends the file.
func applyRecord(b *pebble.Batch, data []byte, seq uint64) (int, gcra.Instant, []byte, error) {
	if len(data) < commitLogHeader {
		return 0, 0, nil, errTornRecord
	}
	size := int(binary.LittleEndian.Uint32(data[0:]))
	if size < 8 || len(data)-commitLogHeader < size {
		return 0, 0, nil, errTornRecord
	}
	payload := data[commitLogHeader : commitLogHeader+size]
	if crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(data[4:]) {
		return 0, 0, nil, errTornRecord
	}
	if size < 16 || binary.BigEndian.Uint64(payload) != seq {
		return 0, 0, nil, errTornRecord
	}
	saved := gcra.Instant(binary.BigEndian.Uint64(payload[8:]))
	r := payload[16:]
	n := 0
	var key []byte
	for len(r) > 0 {
		k, v, rest, ok := recordChange(r)
		if !ok {
			return 0, 0, nil, errors.New("a record whose checksum holds does not parse")
		}
		r = rest
		key = tatKey(key, string(k))
		var err error
		if len(v) == 0 {
			err = b.Delete(key, nil)
		} else {
			if _, _, _, ok := decodeValue(v); !ok {
				return 0, 0, nil, fmt.Errorf("key %q: a value of %d bytes that no kind has", k, len(v))
			}
			err = b.Set(key, v, nil)
		}
		if err != nil {
			return 0, 0, nil, err
		}
		n++
	}
	return n, saved, data[commitLogHeader+size:], nil
}

// recordChange reads one change's key and value from a record's payload.
func recordChange(r []byte) (key, value, rest []byte, ok bool) {
	kl, m := binary.Uvarint(r)
	if m <= 0 || uint64(len(r)-m) < kl {
		return nil, nil, nil, false
	}
	key, r = r[m:m+int(kl)], r[m+int(kl):]
	vl, m := binary.Uvarint(r)
	if m <= 0 || uint64(len(r)-m) < vl {
		return nil, nil, nil, false
	}
	return key, r[m : m+int(vl)], r[m+int(vl):], true
}

func readAll(fs vfs.FS, name string) ([]byte, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// commitLogState is the PebbleBackend's side of the commit log: lmu guards
// log (Log and Seal), freeMu the recycled file's number (free; 0: none).
type commitLogState struct {
	lmu    sync.Mutex
	log    commitLog
	freeMu sync.Mutex
	free   uint64
}
