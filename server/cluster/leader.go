package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/faucet-dev/faucet/db"
)

// leadership is this member's part in the election: whether it leads, how
// long it may trust that without a renewal, and the duties it runs while it
// leads. Only the heartbeat loop touches it, so it needs no lock.
type leadership struct {
	duties  []LeaderDuty
	leading bool
	// trustUntil is when the lease this member last won may have lapsed,
	// by this process's own clock, less a margin for the clocks of the
	// members and the database to disagree.
	trustUntil time.Time
}

// attempt takes or renews the leader lease and starts or stops the leader
// duties accordingly. When the store does not answer, the member keeps
// leading only while its last lease is sure to hold: the sweeps are fenced
// in SQL, so two leaders for a moment do no harm, but none for long would.
func (l *leadership) attempt(ctx context.Context, m *Member) {
	begun := time.Now()
	won, err := m.store.LeaderElect(ctx, m.cfg.LeaderTTL)
	switch {
	case err != nil:
		if ctx.Err() != nil {
			return
		}
		l.step(ctx, m, l.leading && time.Now().Before(l.trustUntil))
	case won:
		l.trustUntil = begun.Add(m.cfg.LeaderTTL - m.cfg.LeaderTTL/5)
		l.step(ctx, m, true)
	default:
		l.step(ctx, m, false)
	}
}

// step starts the leader duties when lead becomes true and stops them when
// it becomes false.
func (l *leadership) step(ctx context.Context, m *Member, lead bool) {
	if lead == l.leading {
		return
	}
	l.leading = lead
	if m.cfg.Metrics != nil {
		v := 0.0
		if lead {
			v = 1
		}
		m.cfg.Metrics.ClusterLeader.Set(v)
	}
	if !lead {
		m.cfg.Logger.Info("no longer the cluster's leader; its sweeps stop here", "instance", m.store.InstanceID())
		for i := len(l.duties) - 1; i >= 0; i-- {
			l.duties[i].Stop()
		}
		return
	}
	m.cfg.Logger.Info("elected the cluster's leader; its sweeps run here", "instance", m.store.InstanceID())
	for _, d := range l.duties {
		if err := d.Start(ctx); err != nil {
			m.cfg.Logger.Error("start a leader duty", "error", err)
		}
	}
}

// resign gives the lease up, so a peer takes the duties over at once.
func (l *leadership) resign(ctx context.Context, m *Member) {
	if err := m.store.LeaderResign(ctx); err != nil {
		m.cfg.Logger.Warn("resign the leadership; a peer takes it over once the lease lapses", "error", err)
	}
}

// reclaimer is the leader's sweep, every poll: requeue (or fail as poison)
// the runs and shards whose owner stopped renewing its lease, and finalize
// the sharded runs whose shards all ended (their last worker may have died
// before it could).
type reclaimer struct {
	m    *Member
	stop context.CancelFunc
	wg   sync.WaitGroup
}

func (r *reclaimer) Start(ctx context.Context) error {
	ctx, r.stop = context.WithCancel(ctx)
	r.wg.Go(func() {
		trouble := &storeTrouble{log: r.m.cfg.Logger, duty: "reclaim"}
		poll := time.NewTicker(r.m.cfg.Poll)
		defer poll.Stop()
		for {
			if err := r.m.sweep(ctx); ctx.Err() == nil {
				trouble.report(err)
			}
			select {
			case <-ctx.Done():
				return
			case <-poll.C:
			}
		}
	})
	return nil
}

func (r *reclaimer) Stop() {
	if r.stop != nil {
		r.stop()
	}
	r.wg.Wait()
}

// sweep is one reclaim sweep.
func (m *Member) sweep(ctx context.Context) error {
	runs, err := m.store.RunRequeueLapsed(ctx, m.cfg.MaxAttempts)
	if err != nil {
		return err
	}
	if runs.Requeued+runs.Poisoned > 0 {
		m.cfg.Logger.Warn("reclaimed runs whose owner stopped renewing its lease",
			"runs_requeued", runs.Requeued, "runs_poisoned", runs.Poisoned)
	}
	if m.cfg.Metrics != nil {
		m.cfg.Metrics.Reclaimed("run", runs.Requeued, runs.Poisoned)
	}
	shards, err := m.reclaimShards(ctx)
	if err != nil {
		return err
	}
	if runs.Requeued+shards > 0 {
		m.shardsSeen.Store(shards > 0 || m.shardsSeen.Load())
		m.kick()
		if err := m.store.Wake(ctx, db.WakeWork); err != nil {
			m.cfg.Logger.Debug("wake the members for requeued work; they find it at their next poll", "error", err)
		}
	}
	return m.finalizeEnded(ctx)
}
