package cluster

import (
	"context"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/server/execution"
)

// A sharded run becomes terminal in one of two places, both here: the
// member that ends its last shard finalizes it at once (finishParent), and
// the leader's sweep finalizes the ones whose last worker died first
// (sweep, through db.ShardFinalizeCompletedParents). Both fence the write on
// the run still being sharded, so one wins, and both report the win through
// parentFinalized.

// finishParent finalizes a sharded run once all its shards have ended, with
// the outcome they decide (db.ShardProgress.Outcome).
func (m *Member) finishParent(runID string) {
	var p db.ShardProgress
	if err := m.exec.Retry(func(ctx context.Context) error {
		var err error
		p, err = m.store.ShardProgress(ctx, runID)
		return err
	}); err != nil {
		m.cfg.Logger.Warn("read shard progress; the sweep finalizes the run later", "run_id", runID, "error", err)
		return
	}
	if !p.AllTerminal() {
		return
	}
	status, msg := p.Outcome()
	var won bool
	if err := m.exec.Retry(func(ctx context.Context) error {
		var err error
		won, err = m.store.RunFinalizeShardedParent(ctx, runID, status, m.cfg.Clock().UTC(), msg)
		return err
	}); err != nil {
		m.cfg.Logger.Warn("finalize sharded run; the sweep finalizes it later", "run_id", runID, "error", err)
		return
	}
	if won {
		m.parentFinalized(context.Background(), runID)
	}
}

// parentFinalized records a sharded run this member finalized.
func (m *Member) parentFinalized(ctx context.Context, runID string) {
	rec, err := m.store.RunGet(ctx, runID)
	if err != nil {
		m.cfg.Logger.Info("sharded run finished", "run_id", runID)
		return
	}
	var elapsed time.Duration
	if rec.StartedAt != nil && rec.FinishedAt != nil {
		elapsed = rec.FinishedAt.Sub(*rec.StartedAt)
	}
	reason := execution.ReasonOK
	switch rec.Status {
	case db.StatusFailed:
		reason = execution.ReasonError
	case db.StatusCancelled:
		reason = execution.ReasonCancelled
	}
	if m.cfg.Metrics != nil {
		m.cfg.Metrics.RunFinished(string(rec.Status), reason, elapsed, rec.RecordsWritten)
	}
	m.cfg.Logger.Info("sharded run finished", "run_id", runID, "status", rec.Status, "records_written", rec.RecordsWritten)
	if m.cfg.ParentFinalized == nil {
		return
	}
	plan, err := m.reload(rec)
	if err != nil {
		m.cfg.Logger.Warn("re-load a sharded run's config for what follows its end; it is left out", "run_id", runID, "error", m.redactor(nil).String(err.Error()))
		return
	}
	m.cfg.ParentFinalized(ctx, rec, plan)
}
