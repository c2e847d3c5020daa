package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/redact"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/server/admission"
	"github.com/faucet-dev/faucet/server/execution"
)

// core is what a cluster member and a server outside a cluster (Local)
// share of sharded runs: splitting a run into its shard rows, executing a
// claimed shard, reclaiming the shards whose lease lapsed and finalizing the
// runs whose shards all ended. Both go through the same store calls, so a
// sharded run leaves the same records wherever it ran.
type core struct {
	cfg   Config
	store db.Store
	exec  *execution.Executor
	pipes Pipelines
	// local: this process is the only one executing its shards (a server
	// outside a cluster), which its run logs say.
	local bool
}

// redactor masks the process's own secrets, until a run's plan is known.
func (c *core) redactor(plan *pipeline.Plan) *redact.Redactor {
	if plan == nil {
		return redact.New(c.cfg.Secrets)
	}
	return redact.New(plan.Secrets, c.cfg.Secrets)
}

// reload loads a claimed run's stored config the way Submit loaded it.
func (c *core) reload(rec *db.RunRecord) (*pipeline.Plan, error) {
	if rec.ConfigBody == nil {
		return nil, errors.New("the run record carries no config (was it submitted by a server outside the cluster?)")
	}
	format := "yaml"
	if rec.ConfigFormat != nil && *rec.ConfigFormat != "" {
		format = *rec.ConfigFormat
	}
	return admission.LoadPlan(c.pipes, *rec.ConfigBody, format, rec.Concurrency, admission.RunClock(rec))
}

// split is the coordinator step of a sharded run: enumerate the source's
// shards and turn the run into a sharded run with those shards, in one
// fenced write, then let the run go. It reports false when the source
// yields fewer than two shards (the run then executes whole). Enumeration is
// deterministic and the insert idempotent, so a member that re-splits a run
// whose coordinator died converges on the same shards.
func (c *core) split(t *execution.Task, plan *pipeline.Plan, count int) (bool, error) {
	runID := t.RunID()
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.SplitTimeout)
	defer cancel()
	shards, err := c.pipes.Shards(ctx, plan.Invocations[0].Source, count)
	if err != nil {
		return false, err
	}
	if len(shards) < 2 {
		t.Log().Append(slog.LevelInfo, fmt.Sprintf("the source yields %d shard(s); the run executes whole", len(shards)))
		return false, nil
	}
	rows := make([]db.ShardInsert, len(shards))
	for i, sh := range shards {
		rows[i] = db.ShardInsert{ShardID: fmt.Sprintf(pipeline.ShardIDFormat, i), Descriptor: sh.Descriptor}
		switch {
		case sh.EstimatedRecords > 0:
			rows[i].SizeEstimate = &sh.EstimatedRecords
		case sh.EstimatedBytes > 0:
			rows[i].SizeEstimate = &sh.EstimatedBytes
		}
	}
	var ok bool
	err = c.exec.Retry(func(ctx context.Context) error {
		var err error
		ok, err = c.store.RunShard(ctx, runID, rows)
		return err
	})
	if err != nil {
		return false, err
	}
	if !ok {
		c.cfg.Logger.Warn("run was reclaimed by another instance before it was split; leaving it to that instance", "run_id", runID)
		c.exec.Forget(t)
		return true, nil
	}
	where := "any cluster member executes them"
	if c.local {
		where = "they execute in parallel on this server"
	}
	t.Log().Append(slog.LevelInfo, fmt.Sprintf("run split into %d shards; %s", len(rows), where))
	c.exec.Forget(t)
	c.cfg.Logger.Info("run split into shards", "run_id", runID, "shards", len(rows))
	// A run cancelled while it was being split got its shards cancelled.
	c.finishParent(runID)
	return true, nil
}

// executeShard executes one claimed shard, which holds a slot: the run's
// config re-loaded, its source narrowed to the shard. The shard's result is
// written fenced on this process still owning it, and the last shard to end
// finalizes the run.
func (c *core) executeShard(cs db.ClaimedShard) {
	defer c.finishParent(cs.RunID)
	t, err := c.exec.AdoptShard(cs, c.redactor(nil))
	if err != nil {
		c.exec.ReturnSlots(1)
		c.cfg.Logger.Error("execute shard; it is failed once its lease lapses", "run_id", cs.RunID, "shard", cs.ShardID, "error", err)
		return
	}
	if t == nil {
		return
	}
	logger := t.Log().Logger().With("shard", cs.ShardID)
	logger.Info("shard claimed", "instance", c.store.InstanceID(), "attempt", cs.Attempt)
	plan, err := c.reload(&cs.Run)
	if err != nil {
		c.exec.FinalizeShard(t, execution.Failed(execution.ReasonError, "re-load the run's config: "+c.redactor(nil).String(err.Error())))
		return
	}
	t.SetRedactor(c.redactor(plan))
	if len(plan.Invocations) != 1 {
		c.exec.FinalizeShard(t, execution.Failed(execution.ReasonError, fmt.Sprintf("the run's config now has %d invocations; a shard runs a single pipeline", len(plan.Invocations))))
		return
	}
	plan.Invocations[0].SourceShard = &pipeline.SourceShard{Descriptor: json.RawMessage(cs.Descriptor)}
	c.exec.ExecuteShard(t, plan)
}

// stopLost stops the held work the renewal did not renew: its lease lapsed
// before this renewal (a late heartbeat on a loaded machine, a pause) and
// the reclaim sweep requeued it, so another member (or another attempt
// here) may be executing it now, or it was cancelled meanwhile. Executing
// it on would duplicate those writes and never end.
func (c *core) stopLost(held []*execution.Task, runs []string, shards []db.ShardKey) {
	ownedRuns := make(map[string]bool, len(runs))
	for _, id := range runs {
		ownedRuns[id] = true
	}
	ownedShards := make(map[db.ShardKey]bool, len(shards))
	for _, k := range shards {
		ownedShards[k] = true
	}
	for _, t := range held {
		owned := ownedRuns[t.RunID()]
		if id := t.ShardID(); id != "" {
			owned = ownedShards[db.ShardKey{RunID: t.RunID(), ShardID: id}]
		}
		if !owned {
			t.Lose()
		}
	}
}

// reclaimShards requeues (or fails as poison) the shards whose worker
// stopped renewing their lease, and reports how many it requeued.
func (c *core) reclaimShards(ctx context.Context) (int, error) {
	rep, err := c.store.ShardRequeueLapsed(ctx, c.cfg.MaxAttempts)
	if err != nil {
		return 0, err
	}
	if rep.Requeued+rep.Poisoned > 0 {
		c.cfg.Logger.Warn("reclaimed shards whose worker stopped renewing its lease",
			"shards_requeued", rep.Requeued, "shards_poisoned", rep.Poisoned)
	}
	if c.cfg.Metrics != nil {
		c.cfg.Metrics.Reclaimed("shard", rep.Requeued, rep.Poisoned)
	}
	return rep.Requeued, nil
}

// finalizeEnded finalizes the sharded runs whose shards all ended, which no
// worker finalized (it died first, or the shards were cancelled before
// any ran).
func (c *core) finalizeEnded(ctx context.Context) error {
	parents, err := c.store.ShardFinalizeCompletedParents(ctx)
	if err != nil {
		return err
	}
	for _, id := range parents {
		c.parentFinalized(ctx, id)
	}
	return nil
}
