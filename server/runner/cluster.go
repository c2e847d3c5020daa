package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/server/logs"
	"github.com/faucet-dev/faucet/server/redact"
)

// Cluster mode. Every member runs the same loops against the shared store,
// which fences every ownership decision in SQL: a claim hands a run or shard
// to exactly one member, a heartbeat keeps its lease, a peer reclaims it once
// the lease lapses, and a terminal write lands only while its writer still
// owns the run. No member reads a row to decide what to write.

// Log seqs of the parts of a cluster run. A run's later attempts and its
// shards log under the run id from whichever member executes them, so each
// part numbers its lines above its own base (partBase): attempt a of the
// whole run from a<<attemptShift, attempt a of shard i from (i+1)<<shardShift
// plus a<<attemptShift. Lines then read back grouped by part.
const (
	attemptShift = 32
	shardShift   = 40
	// maxLogAttempt is the last attempt with a base of its own; later ones
	// share it (their lines may then collide with each other's).
	maxLogAttempt = 1<<(shardShift-attemptShift) - 1
)

// partBase is the first log seq of attempt of a run (shard < 0) or of
// its shard shard.
func partBase(shard int64, attempt int) int64 {
	base := int64(min(attempt, maxLogAttempt)) << attemptShift
	if shard >= 0 {
		base |= (shard + 1) << shardShift
	}
	return base
}

// shardIDFormat names shard i of a run; the id sorts like the index.
const shardIDFormat = "%05d"

// kick wakes the claim loop.
func (r *Runner) kick() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Cluster runs this member's cluster duties until ctx ends: the claim loop
// (woken by local submits and freed slots, else every ClusterPoll), which
// also reclaims runs and shards whose owner's lease lapsed, finalizes
// sharded runs whose shards all ended, and delivers cancel requests made on
// peers; and the heartbeat, every third of the lease, which renews this
// member's leases and membership row. Claiming stops when Shutdown begins;
// the heartbeat goes on until ctx ends, so runs still flushing keep their
// leases.
func (r *Runner) Cluster(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.heartbeatLoop(ctx)
	}()
	r.claimLoop(ctx)
	<-done
}

// storeTrouble logs a failing cluster duty once per outage, not once per
// attempt, and says when it recovers.
type storeTrouble struct {
	log     *slog.Logger
	duty    string
	failing bool
}

func (t *storeTrouble) report(err error) {
	switch {
	case err != nil && !t.failing:
		t.failing = true
		t.log.Warn("cluster duty failing; retrying", "duty", t.duty, "error", err)
	case err == nil && t.failing:
		t.failing = false
		t.log.Info("cluster duty recovered", "duty", t.duty)
	}
}

func (r *Runner) claimLoop(ctx context.Context) {
	poll := time.NewTicker(r.cfg.ClusterPoll)
	defer poll.Stop()
	claims := &storeTrouble{log: r.log, duty: "claim"}
	sweeps := &storeTrouble{log: r.log, duty: "reclaim"}
	r.sweep(ctx, sweeps)
	for {
		polled := false
		select {
		case <-ctx.Done():
			return
		case <-r.shutdown:
			return
		case <-poll.C:
			r.sweep(ctx, sweeps)
			polled = true
		case <-r.wake:
		}
		claims.report(r.claimWork(ctx, polled))
	}
}

// sweep does the periodic duties: reclaim expired runs and shards, finalize
// sharded runs whose shards all ended (their last worker may have died),
// deliver cancel requests, and count the cluster's shards by state.
func (r *Runner) sweep(ctx context.Context, trouble *storeTrouble) {
	runs, err := r.store.RunRequeueLapsed(ctx, r.cfg.MaxAttempts)
	if err != nil {
		trouble.report(err)
		return
	}
	shards, err := r.store.ShardRequeueLapsed(ctx, r.cfg.MaxAttempts)
	if err != nil {
		trouble.report(err)
		return
	}
	parents, err := r.store.ShardFinalizeCompletedParents(ctx)
	if err != nil {
		trouble.report(err)
		return
	}
	err = r.deliverCancels(ctx)
	if err == nil {
		err = r.countClusterShards(ctx)
	}
	trouble.report(err)
	if runs.Requeued+runs.Poisoned+shards.Requeued+shards.Poisoned > 0 {
		r.log.Warn("reclaimed work whose owner stopped renewing its lease",
			"runs_requeued", runs.Requeued, "runs_poisoned", runs.Poisoned,
			"shards_requeued", shards.Requeued, "shards_poisoned", shards.Poisoned)
	}
	if r.metrics != nil {
		r.metrics.Reclaimed("run", runs.Requeued, runs.Poisoned)
		r.metrics.Reclaimed("shard", shards.Requeued, shards.Poisoned)
	}
	for _, id := range parents {
		r.parentFinalized(ctx, id)
	}
	if runs.Requeued+shards.Requeued > 0 {
		r.kick()
	}
}

// countClusterShards refreshes the gauge of the cluster's shards by state
// from one count over the runs still sharded.
func (r *Runner) countClusterShards(ctx context.Context) error {
	if r.metrics == nil {
		return nil
	}
	p, err := r.store.ShardProgressInFlight(ctx)
	if err != nil {
		return err
	}
	r.metrics.ClusterShardStates(p.Pending, p.Running, p.Completed, p.Failed, p.Cancelled)
	return nil
}

// deliverCancels stops the runs and shards executing here that carry a
// cancel request made on a peer.
func (r *Runner) deliverCancels(ctx context.Context) error {
	runs, err := r.store.RunPendingCancellations(ctx)
	if err != nil {
		return err
	}
	for _, id := range runs {
		r.mu.Lock()
		a := r.active[id]
		r.mu.Unlock()
		if a != nil {
			a.requestCancel()
		}
	}
	sharded, err := r.store.ShardPendingCancellations(ctx)
	if err != nil {
		return err
	}
	for _, id := range sharded {
		r.cancelShards(id)
	}
	return nil
}

// claimWork claims as much work as this member has free slots for: shards
// of runs already split first (work in progress), then the oldest pending
// runs. Each claimed item takes a slot before it is claimed, so a claim
// never waits for one. Shards are looked for when shardsToo (the poll) or
// when the last look found more than it could take.
func (r *Runner) claimWork(ctx context.Context, shardsToo bool) error {
	if r.isClosing() {
		return nil
	}
	free := 0
fill:
	for free < cap(r.slots) {
		select {
		case r.slots <- struct{}{}:
			free++
		default:
			break fill
		}
	}
	used := 0
	defer func() {
		for ; used < free; used++ {
			<-r.slots
		}
	}()
	if free == 0 {
		return nil
	}
	if shardsToo || r.shardsSeen.Load() {
		shards, err := r.store.ShardClaim(ctx, free)
		if err != nil {
			return err
		}
		// Shards come from splits, which are rare: after a claim that left
		// none pending, only the poll looks for them again.
		r.shardsSeen.Store(len(shards) == free)
		for _, sh := range shards {
			used++
			r.startClaimed(func() { r.executeShard(sh) }, func(ctx context.Context) (bool, error) {
				return r.store.ShardRelease(ctx, sh.RunID, sh.ShardID)
			})
		}
		if r.metrics != nil && len(shards) > 0 {
			r.metrics.ClusterClaims.WithLabelValues("shard").Add(float64(len(shards)))
		}
		if used == free {
			// More may be waiting: look again once a slot frees.
			return nil
		}
	}
	runs, err := r.store.RunClaimPending(ctx, free-used)
	if err != nil {
		return err
	}
	doomed := r.cancelRequested(ctx, runs)
	for _, rec := range runs {
		used++
		cancelled := doomed[rec.RunID]
		r.startClaimed(func() { r.executeClaimed(rec, cancelled) }, func(ctx context.Context) (bool, error) {
			return r.store.RunRelease(ctx, rec.RunID)
		})
	}
	if r.metrics != nil && len(runs) > 0 {
		r.metrics.ClusterClaims.WithLabelValues("run").Add(float64(len(runs)))
	}
	return nil
}

// cancelRequested returns which of the runs just claimed carry a cancel
// request. Only a run that ran before can: a pending run is cancelled
// outright, while a running one keeps its request when its lease lapses and
// it goes back to pending. So the store is asked only when a claimed run is
// on a later attempt. When it cannot answer, the runs execute and the next
// poll delivers their cancel as for any running run.
func (r *Runner) cancelRequested(ctx context.Context, runs []db.RunRecord) map[string]bool {
	again := false
	for _, rec := range runs {
		again = again || rec.Attempt > 0
	}
	if !again {
		return nil
	}
	ids, err := r.store.RunPendingCancellations(ctx)
	if err != nil {
		r.log.Warn("read the cancel requests of claimed runs; a later poll delivers them", "error", err)
		return nil
	}
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out
}

// startClaimed runs one claimed item, which holds one slot, in the
// background; Shutdown waits for it. An item claimed while Shutdown began is
// handed back with giveBack instead.
func (r *Runner) startClaimed(run func(), giveBack func(context.Context) (bool, error)) {
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		<-r.slots
		if _, err := giveBack(context.Background()); err != nil {
			r.log.Warn("hand work claimed during shutdown back to the cluster; a peer takes it over once its lease lapses", "error", err)
		}
		return
	}
	r.inFlight++
	r.wg.Add(1)
	r.mu.Unlock()
	r.gauges()
	go func() {
		defer r.wg.Done()
		run()
	}()
}

// executeClaimed executes a run claimed from the cluster: it re-loads the
// stored config with this member's environment and defaults, then either
// splits the run into shards (Mode B) or executes it whole. A run claimed
// with a cancel request (its earlier owner died before it stopped the run)
// is finalized cancelled without executing again; its records written stay
// those its earlier owner last reported.
func (r *Runner) executeClaimed(rec db.RunRecord, cancelRequested bool) {
	a := &active{rec: &rec, cancel: make(chan struct{}), owned: true}
	r.mu.Lock()
	r.active[rec.RunID] = a
	r.mu.Unlock()
	defer r.release(a)
	red := redact.New(r.cfg.Secrets)
	a.log = r.logs.OpenPart(rec.RunID, rec.RunID, partBase(-1, rec.Attempt), red)
	a.log.Append(slog.LevelInfo, fmt.Sprintf("run claimed by instance %s (attempt %d)", r.store.InstanceID(), rec.Attempt))
	if cancelRequested {
		r.freeSlot()
		a.log.Append(slog.LevelInfo, "the run was cancelled while an earlier attempt ran; it does not execute again")
		r.finalize(a, outcome{status: db.StatusCancelled, reason: reasonCancelled, records: rec.RecordsWritten}, time.Time{}, red)
		return
	}

	plan, ok := r.plans.take(rec.RunID)
	if !ok {
		var err error
		if plan, err = r.reload(&rec); err != nil {
			r.freeSlot()
			r.finalize(a, failed(reasonError, "re-load the claimed run's config: "+red.String(err.Error())), time.Time{}, red)
			return
		}
	}
	red = r.redactor(plan)
	if shards, whole := r.shardCount(plan); shards > 0 {
		split, err := r.split(a, plan, shards, red)
		switch {
		case err != nil:
			r.freeSlot()
			r.finalize(a, failed(reasonError, "split the run into shards: "+red.String(err.Error())), time.Time{}, red)
			return
		case split:
			r.freeSlot()
			return
		}
	} else if whole != "" {
		a.log.Append(slog.LevelWarn, whole)
	}
	r.execute(a, plan, red, r.freeSlot)
}

// reload loads a claimed run's stored config the way Submit loaded it.
func (r *Runner) reload(rec *db.RunRecord) (*pipeline.Plan, error) {
	if rec.ConfigBody == nil {
		return nil, errors.New("the run record carries no config (was it submitted by a server outside the cluster?)")
	}
	req := SubmitRequest{Config: *rec.ConfigBody, ConfigFormat: "yaml", Concurrency: rec.Concurrency}
	if rec.ConfigFormat != nil && *rec.ConfigFormat != "" {
		req.ConfigFormat = *rec.ConfigFormat
	}
	return r.load(req)
}

// split is the coordinator step of Mode B: enumerate the source's shards
// and turn the run into a sharded run with those shards, in one fenced
// write. It reports false when the source yields fewer than two shards (the
// run then executes whole). Enumeration is deterministic and the insert
// idempotent, so a member that re-splits a run whose coordinator died
// converges on the same shards.
func (r *Runner) split(a *active, plan *pipeline.Plan, count int, red *redact.Redactor) (bool, error) {
	runID := a.rec.RunID
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.ProbeTimeout)
	defer cancel()
	shards, err := r.engine.Shards(ctx, plan.Invocations[0].Source, count)
	if err != nil {
		return false, err
	}
	if len(shards) < 2 {
		a.log.Append(slog.LevelInfo, fmt.Sprintf("the source yields %d shard(s); the run executes whole", len(shards)))
		return false, nil
	}
	rows := make([]db.ShardInsert, len(shards))
	for i, sh := range shards {
		rows[i] = db.ShardInsert{ShardID: fmt.Sprintf(shardIDFormat, i), Descriptor: sh.Descriptor}
		switch {
		case sh.EstimatedRecords > 0:
			rows[i].SizeEstimate = &sh.EstimatedRecords
		case sh.EstimatedBytes > 0:
			rows[i].SizeEstimate = &sh.EstimatedBytes
		}
	}
	var ok bool
	err = r.retry(func(ctx context.Context) error {
		var err error
		ok, err = r.store.RunShard(ctx, runID, rows)
		return err
	})
	if err != nil {
		return false, err
	}
	if !ok {
		r.log.Warn("run was reclaimed by another instance before it was split; leaving it to that instance", "run_id", runID)
		a.log.Finish()
		return true, nil
	}
	a.log.Append(slog.LevelInfo, fmt.Sprintf("run split into %d shards; any cluster member executes them", len(rows)))
	if err := a.log.FlushWith(func(lines []db.RunLogLine, maxLines int) error {
		return r.store.RunLogAppend(context.Background(), runID, lines, maxLines)
	}); err != nil {
		r.log.Warn("persist run log lines", "run_id", runID, "error", err)
	}
	a.log.Finish()
	r.log.Info("run split into shards", "run_id", runID, "shards", len(rows))
	// A run cancelled while it was being split got its shards cancelled.
	r.finishParent(runID)
	r.shardsSeen.Store(true)
	r.kick()
	return true, nil
}

// handBack gives a claimed run this member stopped for its shutdown back to
// the cluster, pending for a peer, instead of failing it. When the write
// cannot land, the run's lease lapses and a peer takes it over all the same.
func (r *Runner) handBack(a *active) {
	a.finalizeMu.Lock()
	defer a.finalizeMu.Unlock()
	if a.finalized {
		return
	}
	a.finalized = true
	runID := a.rec.RunID
	a.log.Append(slog.LevelWarn, "instance "+r.store.InstanceID()+" is shutting down; the run goes back to the cluster for another member")
	ok, err := r.giveBack(a.log, runID, func(ctx context.Context) (bool, error) { return r.store.RunRelease(ctx, runID) })
	r.logHandBack("run", runID, "", ok, err)
}

// giveBack persists a stopped part's pending lines and then hands the part
// back with give.
func (r *Runner) giveBack(lr *logs.Run, runID string, give func(context.Context) (bool, error)) (bool, error) {
	var ok bool
	err := lr.FlushWith(func(lines []db.RunLogLine, maxLines int) error {
		return r.retry(func(ctx context.Context) error {
			if err := r.store.RunLogAppend(ctx, runID, lines, maxLines); err != nil {
				return err
			}
			var err error
			ok, err = give(ctx)
			return err
		})
	})
	lr.Finish()
	return ok, err
}

func (r *Runner) logHandBack(kind, runID, shardID string, ok bool, err error) {
	switch {
	case err != nil:
		r.log.Error("hand "+kind+" back to the cluster; a peer takes it over once its lease lapses", "run_id", runID, "shard", shardID, "error", err)
	case !ok:
		r.log.Warn(kind+" was reclaimed by another instance while it ran here", "run_id", runID, "shard", shardID)
	default:
		r.log.Info(kind+" handed back to the cluster at shutdown", "run_id", runID, "shard", shardID)
	}
}

// executeShard executes one claimed shard: the run's config re-loaded,
// its source narrowed to the shard. The shard's result is written fenced on
// this member still owning it, and the last shard to end finalizes the run.
func (r *Runner) executeShard(cs db.ClaimedShard) {
	defer r.finishParent(cs.RunID)
	var index int64
	_, _ = fmt.Sscanf(cs.ShardID, "%d", &index)
	rec := cs.Run
	a := &active{rec: &rec, cancel: make(chan struct{}), owned: true}
	r.mu.Lock()
	if r.shards[cs.RunID] == nil {
		r.shards[cs.RunID] = map[string]*active{}
	}
	r.shards[cs.RunID][cs.ShardID] = a
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.shards[cs.RunID], cs.ShardID)
		if len(r.shards[cs.RunID]) == 0 {
			delete(r.shards, cs.RunID)
		}
		r.mu.Unlock()
	}()
	red := redact.New(r.cfg.Secrets)
	a.log = r.logs.OpenPart(cs.RunID+"/"+cs.ShardID, cs.RunID, partBase(index, cs.Attempt), red)
	if r.metrics != nil {
		r.metrics.ShardsInFlight.Inc()
		defer r.metrics.ShardsInFlight.Dec()
	}
	logger := a.log.Logger().With("shard", cs.ShardID)
	logger.Info("shard claimed", "instance", r.store.InstanceID(), "attempt", cs.Attempt)

	o := func() outcome {
		plan, err := r.reload(&rec)
		if err != nil {
			return failed(reasonError, "re-load the run's config: "+red.String(err.Error()))
		}
		red = r.redactor(plan)
		if len(plan.Invocations) != 1 {
			return failed(reasonError, fmt.Sprintf("the run's config now has %d invocations; a shard runs a single pipeline", len(plan.Invocations)))
		}
		plan.Invocations[0].SourceShard = &pipeline.SourceShard{Descriptor: json.RawMessage(cs.Descriptor)}
		return r.perform(a, plan, red, logger)
	}()
	r.freeSlot()
	if o.reason == reasonShutdown {
		logger.Warn("instance " + r.store.InstanceID() + " is shutting down; the shard goes back to the cluster for another member")
		ok, err := r.giveBack(a.log, cs.RunID, func(ctx context.Context) (bool, error) {
			return r.store.ShardRelease(ctx, cs.RunID, cs.ShardID)
		})
		r.logHandBack("shard", cs.RunID, cs.ShardID, ok, err)
		return
	}
	status := db.ShardCompleted
	switch o.status {
	case db.StatusFailed:
		status = db.ShardFailed
	case db.StatusCancelled:
		status = db.ShardCancelled
	}
	res := db.ShardResult{Status: status, RecordsWritten: o.records, Error: red.Ptr(o.err)}
	if status == db.ShardCompleted && r.cfg.Catalog != nil {
		res.Lineage = r.cfg.Catalog.ShardLineage(o.results)
	}
	if o.err != nil {
		logger.Error("shard "+string(status), "records_written", o.records, "error", *res.Error)
	} else {
		logger.Info("shard "+string(status), "records_written", o.records)
	}
	var won bool
	err := a.log.FlushWith(func(lines []db.RunLogLine, maxLines int) error {
		return r.retry(func(ctx context.Context) error {
			if err := r.store.RunLogAppend(ctx, cs.RunID, lines, maxLines); err != nil {
				return err
			}
			var err error
			won, err = r.store.ShardFinalize(ctx, cs.RunID, cs.ShardID, res)
			return err
		})
	})
	a.log.Finish()
	switch {
	case err != nil:
		r.log.Error("write shard result", "run_id", cs.RunID, "shard", cs.ShardID, "error", err)
	case !won:
		r.log.Warn("shard was reclaimed by another instance while it ran here; discarding this result",
			"run_id", cs.RunID, "shard", cs.ShardID, "status", status, "records_written", o.records)
	default:
		if r.metrics != nil {
			r.metrics.ShardsFinished.WithLabelValues(string(status)).Inc()
		}
	}
}

// finishParent finalizes a sharded run once all its shards have ended, with
// the outcome they decide (db.ShardProgress.Outcome). The write is fenced on
// the run still being sharded, so of the members that see the last shard
// end, one wins.
func (r *Runner) finishParent(runID string) {
	ctx := context.Background()
	var p db.ShardProgress
	if err := r.retry(func(ctx context.Context) error {
		var err error
		p, err = r.store.ShardProgress(ctx, runID)
		return err
	}); err != nil {
		r.log.Warn("read shard progress; the sweep finalizes the run later", "run_id", runID, "error", err)
		return
	}
	if !p.AllTerminal() {
		return
	}
	status, msg := p.Outcome()
	var won bool
	if err := r.retry(func(ctx context.Context) error {
		var err error
		won, err = r.store.RunFinalizeShardedParent(ctx, runID, status, time.Now().UTC(), msg)
		return err
	}); err != nil {
		r.log.Warn("finalize sharded run; the sweep finalizes it later", "run_id", runID, "error", err)
		return
	}
	if won {
		r.parentFinalized(ctx, runID)
	}
}

// parentFinalized records a sharded run this member finalized.
func (r *Runner) parentFinalized(ctx context.Context, runID string) {
	rec, err := r.store.RunGet(ctx, runID)
	if err != nil {
		r.log.Info("sharded run finished", "run_id", runID)
		return
	}
	var elapsed time.Duration
	if rec.StartedAt != nil && rec.FinishedAt != nil {
		elapsed = rec.FinishedAt.Sub(*rec.StartedAt)
	}
	reason := reasonOK
	switch rec.Status {
	case db.StatusFailed:
		reason = reasonError
	case db.StatusCancelled:
		reason = reasonCancelled
	}
	if r.metrics != nil {
		r.metrics.RunFinished(string(rec.Status), reason, elapsed, rec.RecordsWritten)
	}
	r.log.Info("sharded run finished", "run_id", runID, "status", rec.Status, "records_written", rec.RecordsWritten)
	if r.cfg.Catalog != nil {
		r.recordSharded(ctx, rec)
	}
}

// recordSharded records a sharded run this member finalized into the
// catalog, with its config loaded here again: the member that split it
// may be gone.
func (r *Runner) recordSharded(ctx context.Context, rec *db.RunRecord) {
	plan, err := r.reload(rec)
	if err != nil {
		r.log.Warn("re-load a sharded run's config for the catalog; its lineage is not recorded", "run_id", rec.RunID, "error", redact.New(r.cfg.Secrets).String(err.Error()))
		return
	}
	r.cfg.Catalog.RecordSharded(ctx, rec, plan)
}

// cancelShards stops the shards of runID executing here.
func (r *Runner) cancelShards(runID string) {
	r.mu.Lock()
	var shards []*active
	for _, a := range r.shards[runID] {
		shards = append(shards, a)
	}
	r.mu.Unlock()
	for _, a := range shards {
		a.requestCancel()
	}
}

// liveShardRecords is what the shards of runID executing here acknowledged
// so far.
func (r *Runner) liveShardRecords(runID string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, a := range r.shards[runID] {
		n += a.records.Load()
	}
	return n
}

// heartbeatLoop heartbeats every third of the lease, and after a failed
// heartbeat sooner, so one lost beat does not put the leases at risk.
func (r *Runner) heartbeatLoop(ctx context.Context) {
	trouble := &storeTrouble{log: r.log, duty: "heartbeat"}
	var reported map[string]int64
	for {
		next, err := r.heartbeat(ctx, reported)
		wait := r.cfg.LeaseTTL / 3
		if err == nil {
			reported = next
		} else {
			wait = r.cfg.LeaseTTL / 10
		}
		trouble.report(err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// heartbeat renews this member's leases and membership row and records the
// live counts of its runs that changed since the last heartbeat (reported),
// so peers serve them on GET. It returns the counts it has now recorded.
func (r *Runner) heartbeat(ctx context.Context, reported map[string]int64) (map[string]int64, error) {
	if _, err := r.store.RunRenewLeases(ctx); err != nil {
		return nil, err
	}
	if _, err := r.store.ShardRenewLeases(ctx); err != nil {
		return nil, err
	}
	st := r.Stats()
	if err := r.store.InstanceHeartbeat(ctx, db.InstanceHeartbeat{
		StartedAt: r.started, Listen: r.cfg.Listen, MaxConcurrent: st.MaxConcurrent, InFlight: st.InFlight,
	}); err != nil {
		return nil, err
	}
	current := map[string]int64{}
	changed := map[string]int64{}
	r.mu.Lock()
	for id, a := range r.active {
		if n := a.records.Load(); a.owned && n > 0 {
			current[id] = n
			if n != reported[id] {
				changed[id] = n
			}
		}
	}
	r.mu.Unlock()
	if _, err := r.store.RunSetProgress(ctx, changed); err != nil {
		return nil, err
	}
	members, err := r.store.InstanceListLive(ctx, r.cfg.LeaseTTL)
	if err != nil {
		return nil, err
	}
	if r.metrics != nil {
		r.metrics.ClusterMembers.Set(float64(len(members)))
	}
	return current, nil
}

// ClusterStatus reports whether cluster mode is on and how many members
// heartbeated within the lease.
func (r *Runner) ClusterStatus(ctx context.Context) (enabled bool, members int, err error) {
	if !r.cfg.Cluster {
		return false, 0, nil
	}
	live, err := r.store.InstanceListLive(ctx, r.cfg.LeaseTTL)
	return true, len(live), err
}

// planCacheSize bounds the plans kept for runs this member accepted: enough
// for every run a burst of local submits wakes its own claim loop for,
// while the plans of runs peers claim age out.
const planCacheSize = 1024

// planCache keeps the plans of recently accepted runs, oldest evicted first.
type planCache struct {
	mu    sync.Mutex
	plans map[string]*pipeline.Plan
	order []string
}

func (c *planCache) put(runID string, plan *pipeline.Plan) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.plans == nil {
		c.plans = map[string]*pipeline.Plan{}
	}
	if len(c.order) >= planCacheSize {
		delete(c.plans, c.order[0])
		c.order = c.order[1:]
	}
	c.plans[runID] = plan
	c.order = append(c.order, runID)
}

// take returns runID's plan and forgets it: a plan serves one execution.
func (c *planCache) take(runID string) (*pipeline.Plan, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.plans[runID]
	delete(c.plans, runID)
	return p, ok
}
