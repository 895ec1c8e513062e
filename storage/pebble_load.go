package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/lease"
	"github.com/redcell/redcell/window"
)

// Reading a store back at the start (OpenPebble): every key through the
// Loader, and the wall clock's correction when it is behind the last save
// (every saved instant moved back by the difference, and written so).

// readThrough opens an existing store read-only, checks its format marker and
// reads every key, which checks every data block's checksum, calling load for
// the live ones. Nothing is written.
func readThrough(dir string, opts PebbleOptions, lock *pebble.Lock, now gcra.Instant, load Loader) (stats LoadStats, version string, err error) {
	// Pebble calls Fatalf on corruption it finds; reading only, on this
	// goroutine, that is an error to return like any other.
	type fatal struct{ msg string }
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(fatal)
			if !ok {
				panic(r)
			}
			err = errors.New(f.msg)
		}
	}()
	logger := pebbleLogger{l: opts.Logger, fatal: func(msg string) { panic(fatal{msg}) }}
	// A block that fails its checksum is reported here, and the read then
	// fails with the error (Pebble's default would call Fatalf).
	var corrupt error
	events := &pebble.EventListener{DataCorruption: func(info pebble.DataCorruptionInfo) {
		if corrupt == nil {
			corrupt = fmt.Errorf("corrupt file %s: %v", info.Path, info.Details)
		}
	}}
	db, err := pebble.Open(dir, &pebble.Options{FS: opts.FS, ReadOnly: true, Lock: lock, Logger: logger, EventListener: events})
	if err != nil {
		return stats, version, err
	}
	defer db.Close()
	it, err := db.NewIter(nil)
	if err != nil {
		return stats, version, err
	}
	marked := false
	var shifted []byte // a state moved by the clock's correction, reused
	for it.First(); it.Valid(); it.Next() {
		k, v := it.Key(), it.Value()
		switch {
		case string(k) == formatKey:
			if string(v) != formatVersion && string(v) != formatV2 && string(v) != formatV1 {
				_ = it.Close()
				return stats, version, fmt.Errorf("%w: %q, this build reads %q to %q", ErrUnknownFormat, v, formatV1, formatVersion)
			}
			version, marked = string(v), true
		case string(k) == savedKey && len(v) == 8:
			stats.Behind = clockCorrection(gcra.Instant(binary.BigEndian.Uint64(v)), now)
		case len(k) > 0 && k[0] == tatPrefix:
			kind, exp, value, ok := decodeValue(v)
			if !ok {
				_ = it.Close()
				return stats, version, fmt.Errorf("key %q: a value of %d bytes that no kind has", k[1:], len(v))
			}
			if stats.Behind > 0 {
				exp, value = shiftState(kind, exp, value, -stats.Behind, shifted[:0])
				if kind != KindTAT {
					shifted = value
				}
			}
			if exp <= now {
				stats.Stale++
				continue
			}
			if err := load(k[1:], kind, exp, value); err != nil {
				_ = it.Close()
				return stats, version, fmt.Errorf("key %q: %w", k[1:], err)
			}
			stats.Loaded++
		default:
			_ = it.Close()
			return stats, version, fmt.Errorf("%w: unexpected key %q", ErrUnknownFormat, k)
		}
	}
	if err := it.Close(); err != nil {
		return stats, version, errors.Join(corrupt, err)
	}
	if corrupt != nil {
		return stats, version, corrupt
	}
	if !marked {
		return stats, version, fmt.Errorf("%w: no format marker", ErrUnknownFormat)
	}
	return stats, version, nil
}

// clockCorrection is how far the wall clock now is behind saved, the last
// save's wall-clock instant: zero when it is not. The saved instant comes
// before every key in the store's order, so the correction is known before
// the first key is read.
func clockCorrection(saved, now gcra.Instant) time.Duration {
	return time.Duration(max(saved-now, 0))
}

// shiftState moves a stored state's instants by offset: its expiry (a TAT
// key's TAT) and, for a boxed kind, the instants inside it (shiftValue,
// appended to buf).
func shiftState(kind Kind, exp gcra.Instant, value []byte, offset time.Duration, buf []byte) (gcra.Instant, []byte) {
	if kind != KindTAT {
		value = shiftValue(kind, value, offset, buf)
	}
	return exp + gcra.Instant(offset), value
}

// shiftValue appends a boxed state to buf with the instants inside it moved
// by offset (window.Shift, lease.Shift).
func shiftValue(kind Kind, value []byte, offset time.Duration, buf []byte) []byte {
	if kind == KindLeases {
		return lease.Shift(value, offset, buf)
	}
	return window.Shift(value, offset, buf)
}

// shiftStore rewrites every key of db with its instants moved by offset, in
// batches, and records now as the last save: the store is then in the frame
// of the clock that opened it.
func shiftStore(db *pebble.DB, offset time.Duration, now gcra.Instant) error {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{tatPrefix}, UpperBound: []byte{tatPrefix + 1}})
	if err != nil {
		return err
	}
	b := db.NewBatch()
	var buf, state []byte
	for it.First(); it.Valid(); it.Next() {
		kind, exp, value, ok := decodeValue(it.Value())
		if !ok {
			continue // readThrough has refused such a store
		}
		exp, state = shiftState(kind, exp, value, offset, state[:0])
		buf = encodeValue(buf, Change{TAT: exp, Kind: kind, Value: string(state)})
		if err := b.Set(it.Key(), buf, nil); err != nil {
			_ = it.Close()
			return err
		}
		if batchFull(b) {
			if err := b.Commit(pebble.NoSync); err != nil {
				_ = it.Close()
				return err
			}
			b.Reset()
		}
	}
	if err := it.Close(); err != nil {
		return err
	}
	if err := b.Set([]byte(savedKey), binary.BigEndian.AppendUint64(nil, uint64(now)), nil); err != nil {
		return err
	}
	return b.Commit(pebble.Sync)
}
