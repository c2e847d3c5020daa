package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/faucet-dev/faucet/db"
)

// Recover fails the runs a previous process left queued or running. Runs
// whose lease expired are failed by the store whatever their owner. When
// exclusive is true this process is known to be the only one using the
// history (a local SQLite file it holds locked), so every non-terminal run
// is an orphan of a crash and is failed at once, without waiting for its
// lease to expire. It returns how many runs it failed.
func (r *Runner) Recover(ctx context.Context, exclusive bool) (int, error) {
	n, err := r.store.RunFailLapsed(ctx)
	if err != nil {
		return 0, fmt.Errorf("recover orphaned runs: %w", err)
	}
	if n > 0 && r.metrics != nil {
		r.metrics.RunsFinished.WithLabelValues(string(db.StatusFailed), reasonRecovered).Add(float64(n))
	}
	if !exclusive {
		return n, nil
	}
	ids, err := r.store.RunFailUnfinished(ctx, msgRecovered)
	if err != nil {
		return n, fmt.Errorf("fail interrupted runs: %w", err)
	}
	for _, runID := range ids {
		if r.metrics != nil {
			r.metrics.RunsFinished.WithLabelValues(string(db.StatusFailed), reasonRecovered).Inc()
		}
		r.log.Warn("recovered interrupted run as failed", "run_id", runID)
	}
	return n + len(ids), nil
}

// Retention says how long history is kept; zero keeps that kind forever.
type Retention struct {
	TerminalRuns      time.Duration
	IdempotencyClaims time.Duration
	Logs              time.Duration
}

// Maintain runs the background duties until ctx ends: renew the leases of
// this instance's runs (so no peer, and no later recovery pass, mistakes them
// for orphans), fail runs whose owner died, and purge expired history. In
// cluster mode the cluster heartbeat renews the leases and the claim loop
// requeues the runs of dead members instead, so only purging is left here.
func (r *Runner) Maintain(ctx context.Context, ret Retention, purgeEvery time.Duration) {
	var leaseC <-chan time.Time
	if !r.cfg.Cluster {
		lease := time.NewTicker(r.cfg.LeaseTTL / 3)
		defer lease.Stop()
		leaseC = lease.C
	}
	purge := time.NewTicker(purgeEvery)
	defer purge.Stop()
	r.purge(ctx, ret)
	for {
		select {
		case <-ctx.Done():
			return
		case <-leaseC:
			if _, err := r.store.RunRenewLeases(ctx); err != nil && ctx.Err() == nil {
				r.log.Warn("renew run leases", "error", err)
			}
			if _, err := r.Recover(ctx, false); err != nil && ctx.Err() == nil {
				r.log.Warn("recover orphaned runs", "error", err)
			}
		case <-purge.C:
			r.purge(ctx, ret)
		}
	}
}

func (r *Runner) purge(ctx context.Context, ret Retention) {
	policy := db.PurgePolicy{TerminalRuns: ret.TerminalRuns, IdempotencyClaims: ret.IdempotencyClaims}
	if r.cfg.Cluster {
		// A member gone for a day is not coming back under its id.
		policy.Instances = 24 * time.Hour
	}
	rep, err := r.store.Purge(ctx, policy)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("purge run history", "error", err)
		}
		return
	}
	var logLines int
	if ret.Logs > 0 {
		if logLines, err = r.store.RunLogPurge(ctx, ret.Logs); err != nil && ctx.Err() == nil {
			r.log.Warn("purge run logs", "error", err)
		}
	}
	if rep.Runs+rep.IdempotencyClaims+logLines > 0 {
		r.log.Info("purged history", "runs", rep.Runs, "idempotency_claims", rep.IdempotencyClaims, "log_lines", logLines)
	}
}

// Shutdown stops intake, fails the queued runs, cancels the running ones so
// they flush, and waits for every run to be finalized until ctx ends. Runs
// still not finalized then are failed as "server shutdown" directly.
func (r *Runner) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		return nil
	}
	r.closing = true
	if d, ok := ctx.Deadline(); ok {
		r.deadline = d
	}
	r.mu.Unlock()
	close(r.shutdown)

	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	r.mu.Lock()
	left := make([]*active, 0, len(r.active))
	for _, a := range r.active {
		left = append(left, a)
	}
	r.mu.Unlock()
	for _, a := range left {
		if a.owned {
			r.handBack(a)
			continue
		}
		r.finalize(a, failed(reasonShutdown, msgShutdown), time.Time{}, nil)
	}
	if len(left) > 0 {
		return fmt.Errorf("%d run(s) did not stop within the shutdown grace and were failed", len(left))
	}
	return errors.New("shutdown grace expired")
}
