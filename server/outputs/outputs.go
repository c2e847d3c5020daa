// Package outputs keeps faucet serve's ledger of the files its runs wrote:
// every file a sink of a server run created or replaced, as the sink
// reported it when it committed, recorded in the history with its run, its
// size and whether a file was there before faucet first wrote it; and the
// admin's deletion of exactly one such file, through the file roots, which
// leaves the entry marked rather than gone.
package outputs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// Errors of Delete; the HTTP layer maps each to its status.
var (
	// ErrNotFound: no entry has this id (404).
	ErrNotFound = errors.New("no local output has this id")
	// ErrDeleted: the entry's file was deleted already (409).
	ErrDeleted = errors.New("the file was deleted already")
	// ErrReplaced: the file at the entry's path is not the one faucet wrote
	// (409).
	ErrReplaced = errors.New("the file at this path is not the one faucet wrote (it was replaced since), so it is not deleted")
)

// Ledger records and deletes the files runs wrote.
type Ledger struct {
	store db.LocalOutputStore
	// files is the server's file access, which a deletion goes through.
	files func() *sdk.Files
	log   *slog.Logger

	mu   sync.Mutex
	held map[string]*heldRun
	// writes tracks the writes of what was held too long, for Close.
	writes sync.WaitGroup
}

// heldRun is what one run's sinks wrote that no write has recorded yet.
type heldRun struct {
	entries []heldEntry
	timer   *time.Timer
}

type heldEntry struct {
	w   db.LocalOutputWrite
	log *slog.Logger
}

// HoldFor bounds how long Hold keeps an entry for its run's terminal write
// to carry: a run's finalize follows its sinks' commits within
// milliseconds, and what waits longer (a long run's earlier invocations, a
// run lost to a peer, a shard, a run cut off by its flush grace) is written
// on its own, as Record would have.
const HoldFor = 500 * time.Millisecond

// New returns the ledger over store; files is the server's file access.
func New(store db.LocalOutputStore, files func() *sdk.Files, log *slog.Logger) *Ledger {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Ledger{store: store, files: files, log: log, held: map[string]*heldRun{}}
}

// Hold notes that runID's sink wrote f. The file's identity is taken as it
// is now, so a later deletion can tell it from a file put there since. The
// entry is left to the run's terminal write (Take), which records it in its
// own transaction instead of a write of its own; held longer than HoldFor,
// it is written on its own. A failure of that write is logged to log (the
// run's) and the server's log: the file is written either way.
func (l *Ledger) Hold(runID string, f pipeline.OutputFile, log *slog.Logger) {
	e := heldEntry{w: l.entry(runID, f), log: log}
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.held[runID]
	if h == nil {
		h = &heldRun{}
		l.held[runID] = h
		h.timer = time.AfterFunc(HoldFor, func() { l.release(runID, h) })
	}
	h.entries = append(h.entries, e)
}

// Take hands over what runID's sinks wrote that is held, for the run's
// terminal write to carry (db.RunFinal.Outputs); nothing held is nil.
func (l *Ledger) Take(runID string) []db.LocalOutputWrite {
	l.mu.Lock()
	h := l.held[runID]
	if h == nil {
		l.mu.Unlock()
		return nil
	}
	delete(l.held, runID)
	l.mu.Unlock()
	h.timer.Stop()
	ws := make([]db.LocalOutputWrite, len(h.entries))
	for i, e := range h.entries {
		ws[i] = e.w
	}
	return ws
}

// Write records entries on their own: what Take handed over to a write
// that did not land, or to a run end that writes none (a shard's).
func (l *Ledger) Write(ctx context.Context, ws []db.LocalOutputWrite) {
	for _, w := range ws {
		l.record(context.WithoutCancel(ctx), heldEntry{w: w})
	}
}

// Close writes what is still held and waits for the writes of what was
// held too long; call it before the store closes.
func (l *Ledger) Close() {
	l.mu.Lock()
	held := l.held
	l.held = map[string]*heldRun{}
	l.mu.Unlock()
	for _, h := range held {
		h.timer.Stop()
		for _, e := range h.entries {
			l.record(context.Background(), e)
		}
	}
	l.writes.Wait()
}

// release writes h's entries on their own once HoldFor has passed without
// a Take.
func (l *Ledger) release(runID string, h *heldRun) {
	l.mu.Lock()
	if l.held[runID] != h {
		l.mu.Unlock()
		return
	}
	delete(l.held, runID)
	l.writes.Add(1)
	l.mu.Unlock()
	defer l.writes.Done()
	for _, e := range h.entries {
		l.record(context.Background(), e)
	}
}

// entry is the ledger write of f, with the file's identity as it is now.
func (l *Ledger) entry(runID string, f pipeline.OutputFile) db.LocalOutputWrite {
	w := db.LocalOutputWrite{Path: f.Path, SizeBytes: f.Size, RunID: runID, Existed: f.Existed}
	if fi, err := l.files().Stat(f.Path); err == nil {
		w.FileID = identity(fi)
		w.SizeBytes = fi.Size()
	}
	return w
}

func (l *Ledger) record(ctx context.Context, e heldEntry) {
	if _, err := l.store.LocalOutputRecord(ctx, e.w); err != nil {
		l.log.Error("record a written file in the ledger", "run_id", e.w.RunID, "path", e.w.Path, "error", err)
		if e.log != nil {
			e.log.Warn("the file this run wrote is not in the ledger of written files", "path", e.w.Path, "error", err)
		}
	}
}

// Delete removes the file of entry id, exactly the one faucet wrote last,
// through the file roots: a directory, a symlink, a file put at the path
// since, a path the roots no longer hold and the server's own files are
// refused. A file already gone is not an error. The entry stays, with its
// deletion time.
func (l *Ledger) Delete(ctx context.Context, id string) (*db.LocalOutput, error) {
	out, err := l.store.LocalOutputGet(ctx, id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read local output: %w", err)
	}
	if out.DeletedAt != nil {
		return nil, ErrDeleted
	}
	files := l.files()
	fi, err := files.Stat(out.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Gone already: the entry says so from now on.
	case err != nil:
		return nil, err
	default:
		if out.FileID != "" && identity(fi) != out.FileID {
			return nil, ErrReplaced
		}
		if err := files.Remove(out.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	deleted, ok, err := l.store.LocalOutputMarkDeleted(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("mark local output deleted: %w", err)
	}
	if !ok {
		return nil, ErrDeleted
	}
	return deleted, nil
}

// identity tells the file fi describes from one put at its path since:
// device and inode, and, since a file system hands a freed inode number to
// the next file it creates, the size and modification time too. Empty when
// the platform has no inode numbers.
func identity(fi fs.FileInfo) string {
	dev, ino, ok := sdk.FileID(fi)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d:%d:%d:%d", dev, ino, fi.Size(), fi.ModTime().UnixNano())
}

// Get returns one entry.
func (l *Ledger) Get(ctx context.Context, id string) (*db.LocalOutput, error) {
	out, err := l.store.LocalOutputGet(ctx, id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, ErrNotFound
	}
	return out, err
}

// List returns one page of entries, newest first.
func (l *Ledger) List(ctx context.Context, f db.LocalOutputFilter) (db.LocalOutputPage, error) {
	return l.store.LocalOutputList(ctx, f)
}
