package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/server/admission"
	"github.com/faucet-dev/faucet/server/execution"
)

// claimLoop claims work whenever woken (a local submit, a freed slot, a
// peer's wake-up) and at every poll, until ctx ends; a claim that failed is
// tried again soon, with backoff, rather than at the next poll. Each poll
// also does the duties every member does for itself: delivering the cancel
// requests made on peers for the work it runs, and counting the cluster's
// shards.
func (m *Member) claimLoop(ctx context.Context) {
	poll := time.NewTicker(m.cfg.Poll)
	defer poll.Stop()
	claims := &storeTrouble{log: m.cfg.Logger, duty: "claim"}
	duties := &storeTrouble{log: m.cfg.Logger, duty: "cancel delivery"}
	duties.report(m.memberDuties(ctx))
	var retry <-chan time.Time
	backoff := claimRetryFirst
	for {
		polled := false
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
			duties.report(m.memberDuties(ctx))
			polled = true
		case <-m.cancels:
			duties.report(m.deliverCancels(ctx))
			continue
		case <-m.wake:
		case <-retry:
		}
		err := m.claimWork(ctx, polled)
		if ctx.Err() != nil {
			return
		}
		claims.report(err)
		retry = nil
		if err != nil {
			retry = time.After(backoff)
			backoff = min(2*backoff, m.cfg.Poll)
		} else {
			backoff = claimRetryFirst
		}
	}
}

// claimRetryFirst is the first wait before a failed claim is tried again.
const claimRetryFirst = 100 * time.Millisecond

// memberDuties delivers cancel requests and refreshes the shard gauge.
func (m *Member) memberDuties(ctx context.Context) error {
	if err := m.deliverCancels(ctx); err != nil {
		return err
	}
	return m.countClusterShards(ctx)
}

// countClusterShards refreshes the gauge of the cluster's shards by state
// from one count over the runs still sharded.
func (m *Member) countClusterShards(ctx context.Context) error {
	if m.cfg.Metrics == nil {
		return nil
	}
	p, err := m.store.ShardProgressInFlight(ctx)
	if err != nil {
		return err
	}
	m.cfg.Metrics.ClusterShardStates(p.Pending, p.Running, p.Completed, p.Failed, p.Cancelled)
	return nil
}

// deliverCancels stops the runs and shards executing here that carry a
// cancel request made on a peer.
func (m *Member) deliverCancels(ctx context.Context) error {
	runs, err := m.store.RunPendingCancellations(ctx)
	if err != nil {
		return err
	}
	for _, id := range runs {
		m.exec.CancelRun(id)
	}
	sharded, err := m.store.ShardPendingCancellations(ctx)
	if err != nil {
		return err
	}
	for _, id := range sharded {
		m.exec.CancelShards(id)
	}
	return nil
}

// claimWork claims as much work as this member has free slots for: shards
// of runs already split first (work in progress), then the oldest pending
// runs. Each claimed item takes a slot before it is claimed, so a claim
// never waits for one. Shards are looked for when shardsToo (the poll) or
// when the last look found more than it could take.
func (m *Member) claimWork(ctx context.Context, shardsToo bool) error {
	free := m.exec.TakeSlots(m.exec.Config().MaxConcurrent)
	if free == 0 {
		return nil
	}
	used := 0
	defer func() { m.exec.ReturnSlots(free - used) }()
	if shardsToo || m.shardsSeen.Load() {
		shards, err := m.store.ShardClaim(ctx, free)
		if err != nil {
			return err
		}
		// Shards come from splits, which are rare: after a claim that left
		// none pending, only the poll (or a wake-up) looks for them again.
		m.shardsSeen.Store(len(shards) == free)
		for _, sh := range shards {
			used++
			m.work.Go(func() { m.executeShard(sh) })
		}
		if m.cfg.Metrics != nil && len(shards) > 0 {
			m.cfg.Metrics.ClusterClaims.WithLabelValues("shard").Add(float64(len(shards)))
		}
		if used == free {
			// More may be waiting: look again once a slot frees.
			return nil
		}
	}
	runs, err := m.store.RunClaimPending(ctx, free-used)
	if err != nil {
		return err
	}
	doomed := m.cancelRequested(ctx, runs)
	for _, rec := range runs {
		used++
		cancelled := doomed[rec.RunID]
		m.work.Go(func() { m.executeClaimed(rec, cancelled) })
	}
	if m.cfg.Metrics != nil && len(runs) > 0 {
		m.cfg.Metrics.ClusterClaims.WithLabelValues("run").Add(float64(len(runs)))
	}
	return nil
}

// cancelRequested returns which of the runs just claimed carry a cancel
// request. Only a run that ran before can: a pending run is cancelled
// outright, while a running one keeps its request when its lease lapses and
// it goes back to pending. So the store is asked only when a claimed run is
// on a later attempt. When it cannot answer, the runs execute and the next
// poll delivers their cancel as for any running run.
func (m *Member) cancelRequested(ctx context.Context, runs []db.RunRecord) map[string]bool {
	again := false
	for _, rec := range runs {
		again = again || rec.Attempt > 0
	}
	if !again {
		return nil
	}
	ids, err := m.store.RunPendingCancellations(ctx)
	if err != nil {
		m.cfg.Logger.Warn("read the cancel requests of claimed runs; a later poll delivers them", "error", err)
		return nil
	}
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out
}

// executeClaimed executes a run claimed from the cluster, which holds a
// slot: it re-loads the stored config with this member's environment and
// defaults (unless this member accepted the run and still has its plan),
// then either splits the run into shards (Mode B, waking the members for
// them) or executes it whole. A run claimed with a cancel request (its
// earlier owner died before it stopped the run) is finalized cancelled
// without executing again; its records written stay those its earlier
// owner last reported.
func (m *Member) executeClaimed(rec db.RunRecord, cancelRequested bool) {
	t := m.exec.Adopt(rec, m.redactor(nil))
	if t == nil {
		return
	}
	t.Log().Append(slog.LevelInfo, fmt.Sprintf("run claimed by instance %s (attempt %d)", m.store.InstanceID(), rec.Attempt))
	if cancelRequested {
		t.Log().Append(slog.LevelInfo, "the run was cancelled while an earlier attempt ran; it does not execute again")
		m.exec.Finalize(t, execution.Cancelled(rec.RecordsWritten))
		return
	}
	plan, ok := m.plans.take(rec.RunID)
	if !ok {
		var err error
		if plan, err = m.reload(&rec); err != nil {
			m.exec.Finalize(t, execution.Failed(execution.ReasonError, "re-load the claimed run's config: "+m.redactor(nil).String(err.Error())))
			return
		}
	}
	red := m.redactor(plan)
	t.SetRedactor(red)
	if shards, whole := admission.ShardCount(m.pipes, plan); shards > 0 {
		split, err := m.split(t, plan, shards)
		switch {
		case err != nil:
			m.exec.Finalize(t, execution.Failed(execution.ReasonError, "split the run into shards: "+red.String(err.Error())))
			return
		case split:
			m.shardsSeen.Store(true)
			m.kick()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := m.store.Wake(ctx, db.WakeWork); err != nil {
				m.cfg.Logger.Debug("wake the members for new shards; they find them at their next poll", "run_id", t.RunID(), "error", err)
			}
			return
		}
	} else if whole != "" {
		t.Log().Append(slog.LevelWarn, whole)
	}
	m.exec.Execute(t, plan)
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
