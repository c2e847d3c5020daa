package execution

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/faucet-dev/faucet/db"
)

// Errors of the run operations; the HTTP layer maps each to its status.
var (
	// ErrNotFound: no such run (404).
	ErrNotFound = errors.New("run not found")
	// ErrNotTerminal: the run has not finished and cannot be deleted (409).
	ErrNotTerminal = errors.New("run has not finished")
	// ErrNotOwned: the run is queued on another server, which must cancel it
	// (409).
	ErrNotOwned = errors.New("run is queued on another faucet serve instance")
)

// CancelOutcome says what Cancel did.
type CancelOutcome int

// The outcomes of Cancel.
const (
	// CancelRequested: the run was queued or running; it is stopping (202).
	CancelRequested CancelOutcome = iota + 1
	// AlreadyTerminal: nothing to do (200).
	AlreadyTerminal
)

// Cancel asks a run to stop. A queued or pending run is finalized at once; a
// running run is cancelled cooperatively, by its owner when that is another
// instance (which hears of it at once when the history carries wake-ups, at
// its next poll otherwise), and so are the shards of a sharded run wherever
// they execute.
func (e *Executor) Cancel(ctx context.Context, runID string) (CancelOutcome, error) {
	e.mu.Lock()
	t := e.runs[runID]
	e.mu.Unlock()
	if t != nil && t.ending.Load() {
		// Its end is being written, and may have landed already: a client
		// that read the run as ended must hear that it ended.
		if rec, err := e.store.RunGet(ctx, runID); err == nil && rec.Status.Terminal() {
			return AlreadyTerminal, nil
		}
	}
	if t != nil && !t.owned {
		t.requestCancel()
		return CancelRequested, nil
	}
	if t != nil {
		// A claimed run: flag it in the store too, so the request survives
		// this instance losing the run to a peer.
		if _, err := e.store.RunRequestCancel(ctx, runID); err != nil {
			e.cfg.Logger.Warn("record cancel request", "run_id", runID, "error", err)
		}
		t.requestCancel()
		return CancelRequested, nil
	}
	rec, err := e.store.RunGet(ctx, runID)
	if errors.Is(err, db.ErrNotFound) {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("read run: %w", err)
	}
	if rec.Status.Terminal() {
		return AlreadyTerminal, nil
	}
	// Not ours: another instance (cluster mode) owns it.
	if ok, err := e.store.RunCancelPending(ctx, runID); err != nil {
		return 0, fmt.Errorf("cancel pending run: %w", err)
	} else if ok {
		return CancelRequested, nil
	}
	if ok, err := e.store.RunRequestCancel(ctx, runID); err != nil {
		return 0, fmt.Errorf("request run cancel: %w", err)
	} else if ok {
		e.CancelShards(runID)
		if err := e.store.Wake(ctx, db.WakeCancel); err != nil {
			e.cfg.Logger.Warn("wake the members for a cancel request; they see it at their next poll", "run_id", runID, "error", err)
		}
		return CancelRequested, nil
	}
	return 0, ErrNotOwned
}

// Delete removes a terminal run with its logs and idempotency claims.
func (e *Executor) Delete(ctx context.Context, runID string) error {
	e.mu.Lock()
	t := e.runs[runID]
	e.mu.Unlock()
	// A run whose end is being written is left to the store, which deletes
	// it once that end has landed and refuses it until then.
	if t != nil && !t.ending.Load() {
		return ErrNotTerminal
	}
	out, err := e.store.RunDelete(ctx, runID)
	if err != nil {
		return fmt.Errorf("delete run: %w", err)
	}
	switch out {
	case db.DeleteNotFound:
		return ErrNotFound
	case db.DeleteStillRunning:
		return ErrNotTerminal
	}
	return nil
}

// Get returns a run, with elapsed_secs and records_written live while it
// runs: the count the sinks acknowledged so far when it executes here, as a
// peer last recorded it otherwise, and for a sharded run the sum over its
// shards.
func (e *Executor) Get(ctx context.Context, runID string) (*db.RunRecord, error) {
	rec, err := e.store.RunGet(ctx, runID)
	if errors.Is(err, db.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read run: %w", err)
	}
	e.live(rec, e.cfg.Clock())
	if rec.Status == db.StatusSharded {
		p, err := e.store.ShardProgress(ctx, runID)
		if err != nil {
			return nil, fmt.Errorf("read shard progress: %w", err)
		}
		rec.RecordsWritten = p.RecordsWritten + e.liveShardRecords(runID)
	}
	return rec, nil
}

// List returns a page of runs, newest first, with Get's live fields.
func (e *Executor) List(ctx context.Context, f db.ListFilter) (db.ListPage, error) {
	page, err := e.store.RunList(ctx, f)
	if err != nil {
		return db.ListPage{}, fmt.Errorf("list runs: %w", err)
	}
	now := e.cfg.Clock()
	for i := range page.Runs {
		e.live(&page.Runs[i], now)
	}
	return page, nil
}

// live fills in the live fields of a run that has not finished. A local run
// executing here is running, whether or not its start is written yet.
func (e *Executor) live(rec *db.RunRecord, now time.Time) {
	if rec.Status.Terminal() {
		return
	}
	e.mu.Lock()
	t := e.runs[rec.RunID]
	e.mu.Unlock()
	if t != nil {
		if at, ok := t.running(); ok && rec.Status == db.StatusQueued {
			rec.Status, rec.StartedAt = db.StatusRunning, &at
		}
		rec.RecordsWritten = max(rec.RecordsWritten, t.records.Load())
	}
	if rec.StartedAt != nil {
		secs := now.Sub(*rec.StartedAt).Seconds()
		rec.ElapsedSecs = &secs
	}
}
