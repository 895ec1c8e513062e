package storage

import (
	"runtime"
	"unsafe"
)

// A region is the memory of one of a table's arrays. Regions of
// mmapThreshold bytes or more are mapped outside the Go heap where the
// platform allows (offHeap): the garbage collector never scans or counts
// them, so they do not raise the heap goal, and freeing one returns its pages
// to the system at once. Smaller ones are ordinary Go memory.
type region struct {
	b      []byte
	mapped bool
}

const mmapThreshold = 64 << 10

// allocRegion returns a zeroed region of size bytes, aligned for uint64.
// Pages of a mapped region cost RSS only once touched.
func allocRegion(size int) region {
	if offHeap && size >= mmapThreshold {
		return region{b: mapAnon(size), mapped: true}
	}
	words := make([]uint64, (size+7)/8)
	return region{b: unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), size)}
}

// replaceRegion puts a fresh region of size bytes in *r and returns the one
// it replaced, for the caller to copy from and then free.
func replaceRegion(r *region, size int) region {
	old := *r
	*r = allocRegion(size)
	return old
}

func (r region) free() {
	if r.mapped {
		unmapAnon(r.b)
	}
}

// tableMem owns a table's regions. When the table is dropped without being
// emptied (a discarded Store), a cleanup unmaps them.
type tableMem struct{ *regionSet }

type regionSet struct{ slots, arena, vals region }

func newTableMem() *tableMem {
	m := &tableMem{&regionSet{}}
	runtime.AddCleanup(m, (*regionSet).free, m.regionSet)
	return m
}

func (rs *regionSet) free() {
	rs.slots.free()
	rs.arena.free()
	rs.vals.free()
	*rs = regionSet{}
}
