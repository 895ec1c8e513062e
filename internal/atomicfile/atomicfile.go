// Package atomicfile writes a small file so that a crash leaves either the
// old file or the new one whole: a temporary file beside it, synced, renamed
// over it, and the directory synced.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path's content with data. On error the old file, if any,
// is left as it was and no temporary file remains.
func Write(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync() // the rename's durability; the file is whole either way
		_ = d.Close()
	}
	return nil
}
