package cluster

import (
	"context"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/server/execution"
)

// A sharded run becomes terminal in one of two places, both here: the
// process that ends its last shard finalizes it at once (finishParent), and
// the sweep (the leader's in a cluster, Local's outside one) finalizes the
// ones whose last worker died first or whose shards were cancelled before
// any ran (finalizeEnded, through db.ShardFinalizeCompletedParents). Both
// fence the write on the run still being sharded, so one wins, and both
// report the win through parentFinalized.

// finishParent finalizes a sharded run once all its shards have ended, with
// the outcome they decide (db.ShardProgress.Outcome).
func (c *core) finishParent(runID string) {
	var p db.ShardProgress
	if err := c.exec.Retry(func(ctx context.Context) error {
		var err error
		p, err = c.store.ShardProgress(ctx, runID)
		return err
	}); err != nil {
		c.cfg.Logger.Warn("read shard progress; the sweep finalizes the run later", "run_id", runID, "error", err)
		return
	}
	if !p.AllTerminal() {
		return
	}
	status, msg := p.Outcome()
	var won bool
	if err := c.exec.Retry(func(ctx context.Context) error {
		var err error
		won, err = c.store.RunFinalizeShardedParent(ctx, runID, status, c.cfg.Clock().UTC(), msg)
		return err
	}); err != nil {
		c.cfg.Logger.Warn("finalize sharded run; the sweep finalizes it later", "run_id", runID, "error", err)
		return
	}
	if won {
		c.parentFinalized(context.Background(), runID)
	}
}

// parentFinalized records a sharded run this process finalized.
func (c *core) parentFinalized(ctx context.Context, runID string) {
	rec, err := c.store.RunGet(ctx, runID)
	if err != nil {
		c.cfg.Logger.Info("sharded run finished", "run_id", runID)
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
	if c.cfg.Metrics != nil {
		c.cfg.Metrics.RunFinished(string(rec.Status), reason, elapsed, rec.RecordsWritten)
	}
	c.cfg.Logger.Info("sharded run finished", "run_id", runID, "status", rec.Status, "records_written", rec.RecordsWritten)
	if c.cfg.ParentFinalized == nil {
		return
	}
	plan, err := c.reload(rec)
	if err != nil {
		c.cfg.Logger.Warn("re-load a sharded run's config for what follows its end; it is left out", "run_id", runID, "error", c.redactor(nil).String(err.Error()))
		return
	}
	c.cfg.ParentFinalized(ctx, rec, plan)
}
