package storage

import (
	"os"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// faultFS is a disk of a fixed capacity in memory, on which a test can make
// writes fail the ways real disks fail: full (ENOSPC once the files and
// another process's share, other, reach the capacity), broken (EIO from
// every sync), or stalled (writes block until the test lets them go).
type faultFS struct {
	vfs.FS
	dir      string
	capacity int64
	other    atomic.Int64 // bytes another process has filled the disk with

	// fillOnWrite, when set, fills the disk (other takes every free byte)
	// at the next write of a file whose name ends with the suffix: another
	// process filling the disk in the middle of a flush.
	fillOnWrite atomic.Pointer[string]
	failSyncs   atomic.Bool
	stall       atomic.Pointer[chan struct{}] // writes wait for it to close
	enospc      atomic.Int64                  // ENOSPC errors returned
}

func newFaultFS(dir string, capacity int64) *faultFS {
	fs := &faultFS{FS: vfs.NewMem(), dir: dir, capacity: capacity}
	return fs
}

// used is what the store's files take, plus other.
func (f *faultFS) used() int64 {
	n := f.other.Load()
	names, _ := f.FS.List(f.dir)
	for _, name := range names {
		if fi, err := f.FS.Stat(f.FS.PathJoin(f.dir, name)); err == nil && !fi.IsDir() {
			n += fi.Size()
		}
	}
	return n
}

// fill makes another process take every free byte.
func (f *faultFS) fill() { f.other.Add(max(f.capacity-f.used(), 0)) }

func (f *faultFS) GetDiskUsage(string) (vfs.DiskUsage, error) {
	avail := max(f.capacity-f.used(), 0)
	return vfs.DiskUsage{AvailBytes: uint64(avail), TotalBytes: uint64(f.capacity), UsedBytes: uint64(f.capacity - avail)}, nil
}

func (f *faultFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.Create(name, category)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

func (f *faultFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.ReuseForWrite(oldname, newname, category)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: newname}, nil
}

func (f *faultFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	file, err := f.FS.OpenReadWrite(name, category, opts...)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

func (f *faultFS) Unwrap() vfs.FS { return f.FS }

type faultFile struct {
	vfs.File
	fs   *faultFS
	name string
}

func (f *faultFile) Write(p []byte) (int, error) {
	if ch := f.fs.stall.Load(); ch != nil {
		<-*ch
	}
	if suffix := f.fs.fillOnWrite.Load(); suffix != nil && len(f.name) >= len(*suffix) && f.name[len(f.name)-len(*suffix):] == *suffix {
		f.fs.fillOnWrite.Store(nil)
		f.fs.fill()
	}
	if f.fs.used()+int64(len(p)) > f.fs.capacity {
		f.fs.enospc.Add(1)
		return 0, &os.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
	}
	return f.File.Write(p)
}

func (f *faultFile) Sync() error {
	if f.fs.failSyncs.Load() {
		return &os.PathError{Op: "fsync", Path: f.name, Err: syscall.EIO}
	}
	return f.File.Sync()
}

func (f *faultFile) SyncData() error { return f.Sync() }

func (f *faultFile) SyncTo(length int64) (bool, error) {
	if f.fs.failSyncs.Load() {
		return false, &os.PathError{Op: "fsync", Path: f.name, Err: syscall.EIO}
	}
	return f.File.SyncTo(length)
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.used()+int64(len(p)) > f.fs.capacity {
		f.fs.enospc.Add(1)
		return 0, &os.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
	}
	return f.File.WriteAt(p, off)
}
