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
}

// New returns the ledger over store; files is the server's file access.
func New(store db.LocalOutputStore, files func() *sdk.Files, log *slog.Logger) *Ledger {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Ledger{store: store, files: files, log: log}
}

// Record notes that runID's sink wrote f. The file's identity is taken as
// it is now, so a later deletion can tell it from a file put there since. A
// failure is logged to log (the run's) and the server's log: the file is
// written either way.
func (l *Ledger) Record(ctx context.Context, runID string, f pipeline.OutputFile, log *slog.Logger) {
	w := db.LocalOutputWrite{Path: f.Path, SizeBytes: f.Size, RunID: runID, Existed: f.Existed}
	if fi, err := l.files().Stat(f.Path); err == nil {
		w.FileID = identity(fi)
		w.SizeBytes = fi.Size()
	}
	if _, err := l.store.LocalOutputRecord(context.WithoutCancel(ctx), w); err != nil {
		l.log.Error("record a written file in the ledger", "run_id", runID, "path", f.Path, "error", err)
		if log != nil {
			log.Warn("the file this run wrote is not in the ledger of written files", "path", f.Path, "error", err)
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
