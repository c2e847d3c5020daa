package cluster

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/server/admission"
	"github.com/faucet-dev/faucet/server/execution"
)

// Local executes the sharded runs of a server outside a cluster in
// parallel, the way a cluster would with this server as its only member:
// a run with shard: {count: N} is split into the same shard rows (split),
// this server claims them (db ShardClaim) into its own execution slots and
// executes each (executeShard), and the last shard to end finalizes the run
// (finishParent). So a sharded run leaves the same records, sums and error
// texts wherever it ran. Local writes no membership row and takes part in
// no election: it only keeps its shards' leases, reclaims the shards whose
// lease lapsed (those a crashed server left running: they execute again
// here, as a cluster's sweep would requeue them) and finalizes the runs
// whose shards all ended without a worker to finalize them.
//
// Each shard takes one execution slot, waiting its turn with the queued
// runs (execution.AwaitSlot): a sharded run never holds a slot while its
// shards wait for one, so it cannot deadlock, however many shards it has
// and however few slots are free, and shards and runs are served first
// come, first served, so neither starves the other.
type Local struct {
	core
	wake chan struct{}
	// stopClaims ends the claim loop; stop ends the keeper.
	stopClaims, stop context.CancelFunc
	claimsDone       chan struct{}
	loops            sync.WaitGroup
	// work tracks the goroutines executing shards.
	work sync.WaitGroup
}

// NewLocal returns the sharded-run executor of a server outside a cluster,
// over store and exec. Of cfg it uses Poll (how often it looks for shards
// and finalizes ended runs without a wake-up), LeaseTTL (its shards' leases
// are renewed every third of it), MaxAttempts, SplitTimeout, Secrets,
// ParentFinalized, Clock, Logger and Metrics.
func NewLocal(cfg Config, store db.Store, exec *execution.Executor, pipes Pipelines) *Local {
	return &Local{
		core: core{cfg: cfg.withDefaults(), store: store, exec: exec, pipes: pipes, local: true},
		wake: make(chan struct{}, 1),
	}
}

// Start starts claiming shards and keeping their leases. ctx is not kept:
// StopClaiming and Stop end them.
func (l *Local) Start(context.Context) error {
	if l.stop != nil {
		return errors.New("cluster: local shards started twice")
	}
	claimCtx, stopClaims := context.WithCancel(context.Background())
	ctx, stop := context.WithCancel(context.Background())
	l.stopClaims, l.stop = stopClaims, stop
	l.claimsDone = make(chan struct{})
	l.loops.Go(func() {
		defer close(l.claimsDone)
		l.claimLoop(claimCtx)
	})
	l.loops.Go(func() { l.keep(ctx) })
	return nil
}

// StopClaiming stops claiming shards, so a server shutting down starts
// nothing new while its shards are handed back.
func (l *Local) StopClaiming() {
	if l.stopClaims != nil {
		l.stopClaims()
		<-l.claimsDone
	}
}

// Stop stops claiming (if not done yet), waits for the shards executing to
// end (the executor stops them) until ctx ends, and stops the keeper.
func (l *Local) Stop(ctx context.Context) {
	if l.stop == nil {
		return
	}
	l.StopClaiming()
	waited := make(chan struct{})
	go func() {
		l.work.Wait()
		close(waited)
	}()
	select {
	case <-waited:
	case <-ctx.Done():
	}
	l.stop()
	l.loops.Wait()
}

// Split is the executor's Config.Split: a run that asked for shards, and
// can have them, is split into its shard rows and let go, and its shards
// are claimed at once. A run that cannot be split executes whole, with the
// reason in its log.
func (l *Local) Split(t *execution.Task, plan *pipeline.Plan) bool {
	count, whole := admission.ShardCount(l.pipes, plan)
	if count == 0 {
		if whole != "" {
			t.Log().Append(slog.LevelWarn, whole)
		}
		return false
	}
	red := l.redactor(plan)
	fail := func(err error) bool {
		l.exec.Finalize(t, execution.Failed(execution.ReasonError, "split the run into shards: "+red.String(err.Error())))
		return true
	}
	if err := l.exec.WriteStart(t); err != nil {
		return fail(err)
	}
	split, err := l.split(t, plan, count)
	switch {
	case err != nil:
		return fail(err)
	case !split:
		return false
	}
	// A cancel that reached the run while it was being split (when it
	// was still held here) goes to the history now, which cancels its
	// pending shards; a later one goes there directly.
	if t.CancelRequested() {
		if err := l.exec.Retry(func(ctx context.Context) error {
			_, err := l.store.RunRequestCancel(ctx, t.RunID())
			return err
		}); err != nil {
			l.cfg.Logger.Warn("record the cancel of a run being split; its shards execute", "run_id", t.RunID(), "error", err)
		}
		l.finishParent(t.RunID())
	}
	signal(l.wake)
	return true
}

// claimLoop claims shards at once, then whenever a split wakes it and at
// every poll, until ctx ends.
func (l *Local) claimLoop(ctx context.Context) {
	poll := time.NewTicker(l.cfg.Poll)
	defer poll.Stop()
	claims := &storeTrouble{log: l.cfg.Logger, duty: "shard claim"}
	for {
		err := l.claimShards(ctx)
		if ctx.Err() != nil {
			return
		}
		claims.report(err)
		select {
		case <-ctx.Done():
			return
		case <-l.wake:
		case <-poll.C:
		}
	}
}

// claimShards claims pending shards one slot at a time, each slot awaited
// in turn with the queued runs, until none is left pending.
func (l *Local) claimShards(ctx context.Context) error {
	for {
		if !l.exec.AwaitSlot(ctx) {
			return nil
		}
		shards, err := l.store.ShardClaim(ctx, 1)
		if err != nil || len(shards) == 0 {
			l.exec.ReturnSlots(1)
			return err
		}
		sh := shards[0]
		l.work.Go(func() { l.executeShard(sh) })
	}
}

// keep renews the leases of the shards executing here every third of the
// lease, stopping any whose lease lapsed and was reclaimed meanwhile, and
// sweeps every poll: the shards whose lease lapsed (a crashed server's) are
// requeued, and the runs whose shards all ended are finalized.
func (l *Local) keep(ctx context.Context) {
	renew := time.NewTicker(l.cfg.LeaseTTL / 3)
	defer renew.Stop()
	poll := time.NewTicker(l.cfg.Poll)
	defer poll.Stop()
	leases := &storeTrouble{log: l.cfg.Logger, duty: "shard leases"}
	sweeps := &storeTrouble{log: l.cfg.Logger, duty: "shard sweep"}
	sweep := func() {
		requeued, err := l.reclaimShards(ctx)
		if err == nil {
			err = l.finalizeEnded(ctx)
		}
		if requeued > 0 {
			signal(l.wake)
		}
		if ctx.Err() == nil {
			sweeps.report(err)
		}
	}
	sweep()
	for {
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
			sweep()
		case <-renew.C:
			// Outside a cluster only shards are claimed (owned), so
			// every held task the renewal does not return was lost.
			held := l.exec.Owned()
			shards, err := l.store.ShardRenewLeases(ctx)
			if err == nil {
				l.stopLost(held, nil, shards)
			}
			if ctx.Err() == nil {
				leases.report(err)
			}
		}
	}
}
