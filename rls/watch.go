package rls

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// ReadFiles reads the configuration at path: the file itself, or every
// file directly in the directory, in name order, symbolic links followed
// and names beginning with a dot left out, so that a Kubernetes ConfigMap's
// mount (its ..data link and timestamped directory) is read once, through
// the links named after its keys.
func ReadFiles(path string) ([]File, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return []File{{Name: path, Data: data}}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var files []File
	for _, name := range names {
		p := filepath.Join(path, name)
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if info.IsDir() {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		files = append(files, File{Name: p, Data: data})
	}
	return files, nil
}

// Watcher reloads the rules of a path into a service whenever what the
// path holds changes: a file edited, added or removed, or a symbolic link
// swapped (a ConfigMap's update). A configuration the loader refuses is
// logged with its file, line and reason, counted, and the rules in force
// are kept.
type Watcher struct {
	Path    string
	Options LoadOptions
	Service *Service
	Logger  *slog.Logger
	Metrics *Metrics

	sum [sha256.Size]byte // of the files last read, loaded or refused
}

// DefaultReloadInterval is how often Run looks at the files.
const DefaultReloadInterval = time.Second

// Load reads and loads the path now, whatever it held before, and puts the
// rules in force: the first load, which must succeed for the server to
// start.
func (w *Watcher) Load() error {
	files, err := ReadFiles(w.Path)
	if err != nil {
		return err
	}
	w.sum = digest(files)
	return w.load(files)
}

// Check reloads the path if what it holds changed since the last Load or
// Check, and reports whether it changed; the error is the load's, when the
// new files were refused.
func (w *Watcher) Check() (changed bool, err error) {
	files, err := ReadFiles(w.Path)
	if err != nil {
		// A ConfigMap's swap is atomic, but an edit in place may be
		// caught half-way: the next look sees the whole.
		w.Metrics.Loaded(0, err)
		return false, err
	}
	sum := digest(files)
	if sum == w.sum {
		return false, nil
	}
	w.sum = sum
	return true, w.load(files)
}

func (w *Watcher) load(files []File) error {
	rules, err := Load(files, w.Options)
	if err == nil {
		w.Service.SetRules(rules)
	}
	reportLoad(w.Logger, w.Metrics, len(files), rules, err, "path", w.Path, "files", len(files))
	return err
}

// reportLoad logs and counts a load of the rules, the same for every
// source of them (Watcher, XDS), each adding attrs that say where they
// came from: n sources put in force, or refused (err) with the rules in
// force kept.
func reportLoad(logger *slog.Logger, m *Metrics, n int, rules *Rules, err error, attrs ...any) {
	m.Loaded(n, err)
	if logger == nil {
		return
	}
	if err != nil {
		logger.Error("rate limit configuration refused, the rules in force are kept", append(attrs, "err", err)...)
		return
	}
	logger.Info("rate limit configuration loaded", append(attrs, "domains", strings.Join(rules.Domains(), ","))...)
}

// Run checks the path every interval until ctx is done.
func (w *Watcher) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, _ = w.Check()
		}
	}
}

// digest identifies a set of files by their names and contents.
func digest(files []File) [sha256.Size]byte {
	var b bytes.Buffer
	for _, f := range files {
		fmt.Fprintf(&b, "%d:%s%d:", len(f.Name), f.Name, len(f.Data))
		b.Write(f.Data)
	}
	return sha256.Sum256(b.Bytes())
}
