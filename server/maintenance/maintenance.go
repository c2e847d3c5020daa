// Package maintenance keeps the run history in shape: it fails the runs a
// crashed server left behind (at start, and, outside a cluster, whenever a
// lease lapses), keeps the leases of this server's own runs alive outside a
// cluster, and purges what outlived its retention. In a cluster the purge
// is a leader duty, run by one member at a time; the cluster's heartbeat
// renews the leases and its leader requeues the runs of dead members.
package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/server/metrics"
)

// Retention says how long history is kept; zero keeps that kind forever.
type Retention struct {
	TerminalRuns      time.Duration
	IdempotencyClaims time.Duration
	Logs              time.Duration
	// Members is how long a cluster member that stopped heartbeating keeps
	// its membership row.
	Members time.Duration
}

// Config configures the maintenance services. Zero values take the
// defaults below.
type Config struct {
	Retention Retention
	// PurgeEvery is how often expired history is purged.
	PurgeEvery time.Duration
	// LeaseTTL is the store's lease: outside a cluster the leases of this
	// server's runs are renewed every third of it.
	LeaseTTL time.Duration
	// Logger and Metrics receive what maintenance reports; nil discards it.
	Logger  *slog.Logger
	Metrics *metrics.Metrics
}

// DefaultPurgeEvery is how often history is purged by default.
const DefaultPurgeEvery = 10 * time.Minute

func (c Config) withDefaults() Config {
	if c.PurgeEvery <= 0 {
		c.PurgeEvery = DefaultPurgeEvery
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = db.DefaultLeaseTTL
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// loop runs every in its own goroutine, tracked by wg, until stopped.
type loop struct {
	stop context.CancelFunc
	wg   sync.WaitGroup
}

// start runs tick at once and then every interval until ctx ends or Stop.
func (l *loop) start(ctx context.Context, interval time.Duration, tick func(ctx context.Context)) error {
	if l.stop != nil {
		return errors.New("maintenance: started twice")
	}
	ctx, l.stop = context.WithCancel(ctx)
	l.wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			tick(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	return nil
}

// Stop ends the loop and waits for it.
func (l *loop) Stop() {
	if l.stop != nil {
		l.stop()
	}
	l.wg.Wait()
	l.stop = nil
}

// Purger purges expired history: terminal runs past their retention (with
// their shards and logs), expired idempotency claims, stale members, and
// old log lines.
type Purger struct {
	loop
	cfg   Config
	store db.Store
}

// NewPurger returns a Purger over store.
func NewPurger(cfg Config, store db.Store) *Purger {
	return &Purger{cfg: cfg.withDefaults(), store: store}
}

// Start purges at once and then every PurgeEvery, until ctx ends or Stop.
func (p *Purger) Start(ctx context.Context) error {
	return p.start(ctx, p.cfg.PurgeEvery, p.purge)
}

func (p *Purger) purge(ctx context.Context) {
	ret := p.cfg.Retention
	rep, err := p.store.Purge(ctx, db.PurgePolicy{
		TerminalRuns: ret.TerminalRuns, IdempotencyClaims: ret.IdempotencyClaims, Instances: ret.Members,
	})
	if err != nil {
		if ctx.Err() == nil {
			p.cfg.Logger.Warn("purge run history", "error", err)
		}
		return
	}
	var logLines int
	if ret.Logs > 0 {
		if logLines, err = p.store.RunLogPurge(ctx, ret.Logs); err != nil && ctx.Err() == nil {
			p.cfg.Logger.Warn("purge run logs", "error", err)
		}
	}
	if rep.Runs+rep.IdempotencyClaims+logLines > 0 {
		p.cfg.Logger.Info("purged history", "runs", rep.Runs, "idempotency_claims", rep.IdempotencyClaims, "log_lines", logLines)
	}
}

// Leases keeps a server outside a cluster honest about its runs: it renews
// their leases every third of the lease, so no peer sharing the history
// (and no later recovery) mistakes them for orphans, and fails the runs of
// peers whose lease lapsed.
type Leases struct {
	loop
	cfg   Config
	store db.Store
}

// NewLeases returns the lease keeper over store.
func NewLeases(cfg Config, store db.Store) *Leases {
	return &Leases{cfg: cfg.withDefaults(), store: store}
}

// Start renews and recovers every third of the lease until ctx ends or Stop.
func (l *Leases) Start(ctx context.Context) error {
	return l.start(ctx, l.cfg.LeaseTTL/3, func(ctx context.Context) {
		if _, err := l.store.RunRenewLeases(ctx); err != nil && ctx.Err() == nil {
			l.cfg.Logger.Warn("renew run leases", "error", err)
		}
		if _, err := Recover(ctx, l.store, false, l.cfg.Metrics, l.cfg.Logger); err != nil && ctx.Err() == nil {
			l.cfg.Logger.Warn("recover orphaned runs", "error", err)
		}
	})
}

// Crash recovery's terminal reason (the reason label of
// faucet_runs_finished_total) and the error of the runs it fails.
const (
	ReasonRecovered = "recovered"
	MsgRecovered    = "faucet serve stopped before the run finished (recovered as failed at the next start)"
)

// Recover fails the runs a crashed server left queued or running: it is the
// one place crash recovery makes runs terminal. Runs whose lease lapsed are
// failed whatever their owner. When exclusive is true this process is known
// to be the only one using the history (a local SQLite file it holds
// locked), so every non-terminal run is an orphan of a crash and is failed
// at once, without waiting for its lease to lapse. It returns how many runs
// it failed.
func Recover(ctx context.Context, store db.RunStore, exclusive bool, m *metrics.Metrics, log *slog.Logger) (int, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n, err := store.RunFailLapsed(ctx)
	if err != nil {
		return 0, fmt.Errorf("recover orphaned runs: %w", err)
	}
	recovered := func(k int) {
		if k > 0 && m != nil {
			m.RunsFinished.WithLabelValues(string(db.StatusFailed), ReasonRecovered).Add(float64(k))
		}
	}
	recovered(n)
	if !exclusive {
		return n, nil
	}
	ids, err := store.RunFailUnfinished(ctx, MsgRecovered)
	if err != nil {
		return n, fmt.Errorf("fail interrupted runs: %w", err)
	}
	recovered(len(ids))
	for _, runID := range ids {
		log.Warn("recovered interrupted run as failed", "run_id", runID)
	}
	return n + len(ids), nil
}
