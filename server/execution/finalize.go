package execution

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/pipeline"
)

// Execute executes a held run whose slot is taken and ends it: finalized
// with how it ended, handed back to the cluster when a claimed run stops for
// the shutdown, or dropped without a write when this member lost it. The
// slot serves the next run as soon as the engine is done with this one,
// before the terminal write.
func (e *Executor) Execute(t *Task, plan *pipeline.Plan) {
	logger := t.log.Logger()
	logger.Info("pipeline run starting", "invocations", len(plan.Invocations))
	o := e.perform(t, plan, logger)
	o.plan = plan
	e.freeSlot(t)
	switch {
	case o.Reason == ReasonLost:
		e.lost(t)
		return
	case t.owned && o.Reason == ReasonShutdown:
		e.handBack(t)
		return
	}
	logger.Info("pipeline run finished", "status", string(o.Status), "records_written", o.Records)
	e.finalize(t, o)
}

// Finalize ends a held run that will not execute (a claimed run cancelled
// meanwhile, or one whose config no longer loads) with o, freeing its slot.
func (e *Executor) Finalize(t *Task, o Outcome) {
	e.freeSlot(t)
	e.finalize(t, o)
}

// Forget lets a held run go without a terminal write: it continues
// elsewhere (split into shards, or taken over by a peer). Its log lines are
// persisted first.
func (e *Executor) Forget(t *Task) {
	e.freeSlot(t)
	e.end(t, func() { e.persistLines(t) })
}

// end runs write as t's one end (finalize, hand-back, lost, shard result,
// forget): under t's end lock, only for the first end, and then t is
// released. It reports whether write ran.
func (e *Executor) end(t *Task, write func()) bool {
	t.ending.Store(true)
	t.endMu.Lock()
	defer t.endMu.Unlock()
	if t.startTimer != nil {
		t.startTimer.Stop()
	}
	if t.ended {
		return false
	}
	t.ended = true
	defer e.release(t)
	write()
	return true
}

// perform executes plan for t, racing completion against the cancel,
// timeout, shutdown and lost-lease triggers, and returns how it ended. The
// records the sinks acknowledge are counted into t.records as they come.
func (e *Executor) perform(t *Task, plan *pipeline.Plan, logger *slog.Logger) Outcome {
	type result struct {
		res []pipeline.InvocationResult
		err error
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan result, 1)
	e.goroutines.Go(func() {
		res, err := e.pipes.Execute(ctx, t.runID, plan, logger, t.records.Store)
		done <- result{res, err}
	})

	var timeout <-chan time.Time
	if secs := t.timeoutSecs; secs != nil && *secs > 0 {
		tm := time.NewTimer(time.Duration(*secs) * time.Second)
		defer tm.Stop()
		timeout = tm.C
	}

	var trigger Outcome
	select {
	case res := <-done:
		return classify(res.res, res.err, t.redactor())
	case <-t.cancel:
		trigger = Cancelled(0)
	case <-e.shutdown:
		trigger = Failed(ReasonShutdown, MsgShutdown)
	case <-timeout:
		trigger = Failed(ReasonTimeout, fmt.Sprintf("run exceeded timeout_secs (%ds)", *t.timeoutSecs))
	case <-t.lost:
		trigger = Outcome{Reason: ReasonLost}
	}
	// Cancel cooperatively: the engine stops the sources and lets the sinks
	// flush what they acknowledged, within a bounded grace.
	logger.Info("stopping run", "reason", trigger.Reason)
	stop()
	grace := time.NewTimer(e.flushGrace())
	defer grace.Stop()
	select {
	case res := <-done:
		o := classify(res.res, res.err, t.redactor())
		if trigger.Reason != ReasonLost && o.Status == db.StatusFailed && o.Reason == ReasonError && !cancelled(res.err, res.res) {
			// A flush that failed for a real reason stays failed.
			return o
		}
		// A clean flush (or one that stopped on the cancel) ends with the
		// trigger's status and the partial counts.
		trigger.Records, trigger.Invocations, trigger.results = o.Records, o.Invocations, o.results
	case <-grace.C:
		logger.Warn("run did not flush within the grace period; finalizing it", "grace", e.flushGrace().String())
		trigger.Records = t.records.Load()
	}
	return trigger
}

// finalize writes the terminal record once per run, together with the log
// lines not persisted yet: it is the one place a run this process held
// becomes terminal. It writes from the record it holds, not from a fresh
// read, so a store that cannot read the record (or lost it) still ends up
// with a terminal run. A claimed run's write is fenced on this instance
// still owning it: when a peer reclaimed it meanwhile, the result is
// discarded. Transient write failures are retried until the write lands.
// Once written, and the run no longer held here (so a cancel or a read of
// it answers from the history, as for any run that ended), Config.Finalized
// is told.
func (e *Executor) finalize(t *Task, o Outcome) {
	var final *Final
	e.end(t, func() { final = e.writeTerminal(t, o) })
	if final != nil && e.cfg.Finalized != nil {
		e.cfg.Finalized(e.writes, *final)
	}
}

// writeTerminal is finalize's write, under t's end lock. It returns what
// Config.Finalized is told, nil when the record did not land: what follows
// an end must not stand for one the history does not hold (recovery fails
// that run later).
func (e *Executor) writeTerminal(t *Task, o Outcome) *Final {
	rec := *t.rec
	now := e.now()
	rec.Status = o.Status
	rec.FinishedAt = &now
	var elapsed time.Duration
	if rec.StartedAt != nil {
		elapsed = now.Sub(*rec.StartedAt)
	}
	rec.RecordsWritten = o.Records
	rec.Invocations = o.Invocations
	if rec.Invocations == nil {
		rec.Invocations = []db.InvocationRecord{}
	}
	rec.Error = t.redactor().Ptr(o.Err)
	t.rec = &rec

	lr := t.log
	if o.Err != nil {
		lr.Append(slog.LevelError, "run "+string(o.Status)+": "+*rec.Error)
	} else {
		lr.Append(slog.LevelInfo, "run "+string(o.Status))
	}
	var outputs []db.LocalOutputWrite
	if e.cfg.Ledger != nil {
		outputs = e.cfg.Ledger.Take(rec.RunID)
	}
	won := true
	err := lr.FlushWith(func(lines []db.RunLogLine, limit db.LogCap) error {
		return e.retry(func(ctx context.Context) error {
			var err error
			won, err = e.store.RunFinish(ctx, db.RunFinal{Record: &rec, Owned: t.owned, Lines: lines, Cap: limit, Outputs: outputs})
			return err
		})
	})
	lr.Finish()
	switch {
	case err != nil:
		e.cfg.Logger.Error("write terminal run record", "run_id", rec.RunID, "status", rec.Status, "error", err)
		if len(outputs) > 0 {
			e.cfg.Ledger.Write(e.writes, outputs)
		}
	case !won:
		e.cfg.Logger.Warn("run was reclaimed by another instance while it ran here; discarding this result",
			"run_id", rec.RunID, "status", rec.Status, "records_written", rec.RecordsWritten)
		return nil
	}
	if e.cfg.Metrics != nil {
		e.cfg.Metrics.RunFinished(string(o.Status), o.Reason, elapsed, o.Records)
	}
	e.cfg.Logger.Info("run finished", "run_id", rec.RunID, "status", rec.Status, "records_written", rec.RecordsWritten)
	if err != nil {
		return nil
	}
	return &Final{Record: rec, Reason: o.Reason, Plan: o.plan, Results: o.results}
}

// handBack gives a claimed run this member stopped for its shutdown back to
// the cluster, pending for a peer, instead of failing it. When the write
// cannot land, the run's lease lapses and a peer takes it over all the same.
func (e *Executor) handBack(t *Task) {
	e.end(t, func() { e.giveBack(t) })
}

// giveBack is handBack's write, under t's end lock.
func (e *Executor) giveBack(t *Task) {
	kind, give := "run", func(ctx context.Context) (bool, error) { return e.store.RunRelease(ctx, t.runID) }
	if t.shard != nil {
		kind = "shard"
		give = func(ctx context.Context) (bool, error) { return e.store.ShardRelease(ctx, t.runID, t.shard.ShardID) }
	}
	t.log.Append(slog.LevelWarn, "instance "+e.store.InstanceID()+" is shutting down; the "+kind+" goes back to the cluster for another member")
	var ok bool
	err := t.log.FlushWith(func(lines []db.RunLogLine, limit db.LogCap) error {
		return e.retry(func(ctx context.Context) error {
			if err := e.store.RunLogAppend(ctx, t.runID, lines, limit); err != nil {
				return err
			}
			var err error
			ok, err = give(ctx)
			return err
		})
	})
	t.log.Finish()
	shard := t.ShardID()
	switch {
	case err != nil:
		e.cfg.Logger.Error("hand "+kind+" back to the cluster; a peer takes it over once its lease lapses", "run_id", t.runID, "shard", shard, "error", err)
	case !ok:
		e.cfg.Logger.Warn(kind+" was reclaimed by another instance while it ran here", "run_id", t.runID, "shard", shard)
	default:
		e.cfg.Logger.Info(kind+" handed back to the cluster at shutdown", "run_id", t.runID, "shard", shard)
	}
}

// lost ends a task this member no longer owns: its lines are persisted (they
// are its attempt's own part of the log) and nothing else is written.
func (e *Executor) lost(t *Task) {
	e.end(t, func() { e.dropLost(t) })
}

// dropLost is lost's end, under t's end lock.
func (e *Executor) dropLost(t *Task) {
	kind := "run"
	if t.shard != nil {
		kind = "shard"
	}
	t.log.Append(slog.LevelWarn, "instance "+e.store.InstanceID()+" lost its lease on the "+kind+" to another member; it stopped executing it")
	e.persistLines(t)
	e.cfg.Logger.Warn(kind+" was taken over by another instance while it ran here; stopped it",
		"run_id", t.runID, "shard", t.ShardID(), "records_written", t.records.Load())
	if e.cfg.Metrics != nil {
		e.cfg.Metrics.LeasesLost.WithLabelValues(kind).Inc()
	}
}

// persistLines writes t's pending log lines and closes its capture.
func (e *Executor) persistLines(t *Task) {
	if err := t.log.FlushWith(func(lines []db.RunLogLine, limit db.LogCap) error {
		return e.retry(func(ctx context.Context) error { return e.store.RunLogAppend(ctx, t.runID, lines, limit) })
	}); err != nil {
		e.cfg.Logger.Warn("persist run log lines", "run_id", t.runID, "error", err)
	}
	t.log.Finish()
}

// ShardEnd is how a shard's execution ended for the cluster.
type ShardEnd int

// The ends of ExecuteShard.
const (
	// ShardWritten: the shard's result was written (or this member could
	// not write it; the sweep sees to the shard).
	ShardWritten ShardEnd = iota + 1
	// ShardLeft: the shard went back to the cluster (a shutdown), or this
	// member lost it; the run's other members finish it.
	ShardLeft
)

// ExecuteShard executes a held shard whose slot is taken, with plan already
// narrowed to the shard, and writes its result fenced on this member still
// owning the shard. At shutdown the shard is handed back instead.
func (e *Executor) ExecuteShard(t *Task, plan *pipeline.Plan) ShardEnd {
	logger := t.log.Logger().With("shard", t.shard.ShardID)
	o := e.perform(t, plan, logger)
	e.freeSlot(t)
	return e.endShard(t, o, logger)
}

// FinalizeShard ends a held shard that will not execute (its config no
// longer loads) with o, freeing its slot.
func (e *Executor) FinalizeShard(t *Task, o Outcome) ShardEnd {
	e.freeSlot(t)
	return e.endShard(t, o, t.log.Logger().With("shard", t.shard.ShardID))
}

// endShard writes how a shard ended.
func (e *Executor) endShard(t *Task, o Outcome, logger *slog.Logger) ShardEnd {
	switch o.Reason {
	case ReasonLost:
		e.lost(t)
		return ShardLeft
	case ReasonShutdown:
		e.handBack(t)
		return ShardLeft
	}
	if !e.end(t, func() { e.writeShard(t, o, logger) }) {
		return ShardLeft
	}
	return ShardWritten
}

// writeShard is endShard's write, under t's end lock.
func (e *Executor) writeShard(t *Task, o Outcome, logger *slog.Logger) {
	status := db.ShardCompleted
	switch o.Status {
	case db.StatusFailed:
		status = db.ShardFailed
	case db.StatusCancelled:
		status = db.ShardCancelled
	}
	res := db.ShardResult{Status: status, RecordsWritten: o.Records, Error: t.redactor().Ptr(o.Err)}
	if status == db.ShardCompleted && e.cfg.ShardLineage != nil {
		res.Lineage = e.cfg.ShardLineage(o.results)
	}
	if o.Err != nil {
		logger.Error("shard "+string(status), "records_written", o.Records, "error", *res.Error)
	} else {
		logger.Info("shard "+string(status), "records_written", o.Records)
	}
	var won bool
	err := t.log.FlushWith(func(lines []db.RunLogLine, limit db.LogCap) error {
		return e.retry(func(ctx context.Context) error {
			if err := e.store.RunLogAppend(ctx, t.runID, lines, limit); err != nil {
				return err
			}
			var err error
			won, err = e.store.ShardFinalize(ctx, t.runID, t.shard.ShardID, res)
			return err
		})
	})
	t.log.Finish()
	if e.cfg.Ledger != nil {
		// A shard's result carries no ledger entries: what its sinks wrote
		// is written now, before the run can end.
		e.cfg.Ledger.Write(e.writes, e.cfg.Ledger.Take(t.runID))
	}
	switch {
	case err != nil:
		e.cfg.Logger.Error("write shard result", "run_id", t.runID, "shard", t.shard.ShardID, "error", err)
	case !won:
		e.cfg.Logger.Warn("shard was reclaimed by another instance while it ran here; discarding this result",
			"run_id", t.runID, "shard", t.shard.ShardID, "status", status, "records_written", o.Records)
	default:
		if e.cfg.Metrics != nil {
			e.cfg.Metrics.ShardsFinished.WithLabelValues(string(status)).Inc()
		}
	}
}
