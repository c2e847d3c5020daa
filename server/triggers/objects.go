package triggers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faucet-dev/faucet/db"
)

// MaxListed bounds the entries one listing of an object_arrival directory
// reads; a larger directory is a failure the trigger's health reports.
const MaxListed = 100_000

// fileState is a file as one listing saw it.
type fileState struct {
	size  int64
	mtime time.Time
}

// listed is a file that matches the trigger's glob.
type listed struct {
	rel string
	fileState
}

// key identifies one version of a file for the history: its path, its
// modification time and its size, digested to a bounded key.
func (f listed) key() string {
	sum := sha256.Sum256([]byte(f.rel + "\x00" + strconv.FormatInt(f.mtime.UnixNano(), 10) + "\x00" + strconv.FormatInt(f.size, 10)))
	return hex.EncodeToString(sum[:])
}

// objectStep lists the directory and fires every file that is settled (a
// listing finds it as the one before did: the same size and modification
// time) and has not fired: one run per file version, whichever member
// gets to it first.
func (w *watcher) objectStep(ctx context.Context, now time.Time) (time.Duration, error) {
	files, err := list(w.t.dir, w.t.glob)
	if err != nil {
		return 0, err
	}
	seen := make(map[string]fileState, len(files))
	present := make(map[string]bool, len(files))
	var due []listed
	for _, f := range files {
		seen[f.rel] = f.fileState
		k := f.key()
		present[k] = true
		prev, ok := w.seen[f.rel]
		if !ok || prev != f.fileState || w.known[k] || w.refused[k] {
			continue
		}
		if !w.t.beginning && f.mtime.Before(w.armedAt) {
			continue
		}
		due = append(due, f)
	}
	w.seen = seen
	// Forget what is gone, so the sets follow the directory, not its past.
	for k := range w.known {
		if !present[k] {
			delete(w.known, k)
		}
	}
	for k := range w.refused {
		if !present[k] {
			delete(w.refused, k)
		}
	}
	if len(due) > 0 {
		keys := make([]string, len(due))
		for i, f := range due {
			keys[i] = f.key()
		}
		done, err := w.s.cfg.Store.TriggerFired(ctx, w.t.Name, keys)
		if err != nil {
			return 0, err
		}
		sort.Slice(due, func(i, j int) bool {
			if !due[i].mtime.Equal(due[j].mtime) {
				return due[i].mtime.Before(due[j].mtime)
			}
			return due[i].rel < due[j].rel
		})
		for _, f := range due {
			k := f.key()
			if done[k] {
				w.known[k] = true
				continue
			}
			switch w.fireFile(ctx, f, k, now) {
			case fired, taken:
				w.known[k] = true
			case rejected:
				w.refused[k] = true
			case transient:
				return 0, fmt.Errorf("%s was not fired; trying again", f.rel)
			}
		}
	}
	w.s.succeeded(w.t, false)
	return w.t.poll, nil
}

func (w *watcher) fireFile(ctx context.Context, f listed, key string, now time.Time) fireOutcome {
	e := newEvent(w.t, now)
	e.fields["object_key"] = f.rel
	e.fields["path"] = filepath.Join(w.t.dir, filepath.FromSlash(f.rel))
	e.fields["size"] = strconv.FormatInt(f.size, 10)
	e.fields["last_modified"] = f.mtime.UTC().Format(time.RFC3339Nano)
	fire := db.TriggerFire{Trigger: w.t.Name, Key: key, Kind: db.TriggerKindObjectArrival, Subject: f.rel, EventAt: f.mtime}
	return w.s.submit(ctx, w.t, e, fire, nil)
}

// list returns the regular files under dir whose path relative to dir
// (slash-separated) matches glob. It descends only as deep as glob has
// segments, and skips every name that starts with "." (files being written
// under a hidden name and renamed into place), symbolic links and other
// special files.
func list(dir, glob string) ([]listed, error) {
	depth := strings.Count(glob, "/") + 1
	var out []listed
	entries := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			// A file that went away while the listing ran is not there.
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if p == dir {
			return nil
		}
		if entries++; entries > MaxListed {
			return fmt.Errorf("the directory holds more than %d entries", MaxListed)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		level := strings.Count(rel, "/") + 1
		if d.IsDir() {
			if level >= depth {
				return filepath.SkipDir
			}
			return nil
		}
		if level != depth || !d.Type().IsRegular() {
			return nil
		}
		if ok, _ := path.Match(glob, rel); !ok {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		out = append(out, listed{rel: rel, fileState: fileState{size: info.Size(), mtime: info.ModTime()}})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	return out, nil
}
