// Package cluster makes a faucet serve one member of a cluster sharing a
// history database: it heartbeats the member's leases and membership row
// (and stops what the heartbeat reports this member no longer owns), claims
// pending runs and shards for the local executor, splits a claimed run into
// shards (Mode B), finalizes sharded runs, delivers cancel requests made on
// peers, and elects one leader among the members, which alone runs the
// sweeps (reclaim, and the leader duties it is given, such as retention).
// Every ownership decision is fenced in SQL by the store; no member reads a
// row to decide what to write.
package cluster

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/server/admission"
	"github.com/faucet-dev/faucet/server/execution"
	"github.com/faucet-dev/faucet/server/metrics"
)

// Pipelines is what a member needs of the pipeline layer: load a claimed
// run's config as a submit does, and split a source into shards.
type Pipelines interface {
	admission.Pipelines
	// Shards splits a source into about count shards.
	Shards(ctx context.Context, source pipeline.ConnectorConfig, count int) ([]pipeline.SourceShard, error)
}

// LeaderDuty is a service that runs only on the elected leader: started when
// this member gains the leader lease, stopped when it loses it or stops.
type LeaderDuty interface {
	Start(ctx context.Context) error
	Stop()
}

// Config configures a Member. Zero values take the defaults below.
type Config struct {
	// Poll is how often the member looks for work, and the leader sweeps,
	// without a wake-up.
	Poll time.Duration
	// LeaseTTL is the store's lease; the heartbeat renews every
	// HeartbeatEvery, by default a third of it.
	LeaseTTL       time.Duration
	HeartbeatEvery time.Duration
	// LeaderTTL is the leader lease; by default LeaseTTL, so a dead
	// leader's duties move about as fast as its runs do.
	LeaderTTL time.Duration
	// MaxAttempts is how many times a run or shard whose owner's lease
	// lapsed is requeued before it is failed as poison.
	MaxAttempts int
	// SplitTimeout bounds enumerating a source's shards.
	SplitTimeout time.Duration
	// Listen is the address this member serves on, for its membership row.
	Listen string
	// Secrets are masked in the logs of claimed runs besides their plans'.
	Secrets []string
	// Leader are the duties this member runs while it leads, besides the
	// reclaim sweep.
	Leader []LeaderDuty
	// ParentFinalized, when set, is told of every sharded run this member
	// finalized, with its config re-loaded here (the member that split it
	// may be gone): the sharded runs' side of execution.Config.Finalized.
	ParentFinalized func(ctx context.Context, rec *db.RunRecord, plan *pipeline.Plan)
	// Clock stamps the membership row; nil means time.Now.
	Clock func() time.Time
	// Logger and Metrics receive what the member reports; nil discards it.
	Logger  *slog.Logger
	Metrics *metrics.Metrics
}

// Defaults for Config.
const (
	DefaultPoll         = 2 * time.Second
	DefaultMaxAttempts  = 3
	DefaultSplitTimeout = 10 * time.Second
)

func (c Config) withDefaults() Config {
	if c.Poll <= 0 {
		c.Poll = DefaultPoll
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = db.DefaultLeaseTTL
	}
	if c.HeartbeatEvery <= 0 {
		c.HeartbeatEvery = c.LeaseTTL / 3
	}
	if c.LeaderTTL <= 0 {
		c.LeaderTTL = c.LeaseTTL
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.SplitTimeout <= 0 {
		c.SplitTimeout = DefaultSplitTimeout
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Member is this process's membership of the cluster.
type Member struct {
	core

	// wake asks the claim loop to look for work now; cancels to deliver
	// the cancel requests made on peers; elect to attempt the election.
	wake, cancels, elect chan struct{}
	// shardsSeen says the claim loop may find pending shards without
	// waiting for its poll.
	shardsSeen atomic.Bool
	// plans holds the plans of the runs this member accepted, so when it
	// claims one of them itself the config is not loaded a second time.
	plans   planCache
	started time.Time

	// stopClaims ends the claim loop; stop ends the heartbeat and the
	// listener.
	stopClaims, stop context.CancelFunc
	claimsDone       chan struct{}
	loops            sync.WaitGroup
	// work tracks the goroutines executing claimed runs and shards.
	work sync.WaitGroup

	leader leadership
}

// New returns a member over store, executing claimed work on exec.
func New(cfg Config, store db.Store, exec *execution.Executor, pipes Pipelines) *Member {
	cfg = cfg.withDefaults()
	m := &Member{
		core: core{cfg: cfg, store: store, exec: exec, pipes: pipes},
		wake: make(chan struct{}, 1), cancels: make(chan struct{}, 1), elect: make(chan struct{}, 1),
		started: cfg.Clock().UTC(),
	}
	m.leader.duties = append([]LeaderDuty{&reclaimer{m: m}}, cfg.Leader...)
	return m
}

// Start starts the claim loop, the heartbeat (which also elects the leader)
// and the listener for wake-ups. ctx is not kept: StopClaiming and Stop end
// them.
func (m *Member) Start(context.Context) error {
	if m.stop != nil {
		return errors.New("cluster: member started twice")
	}
	claimCtx, stopClaims := context.WithCancel(context.Background())
	ctx, stop := context.WithCancel(context.Background())
	m.stopClaims, m.stop = stopClaims, stop
	m.claimsDone = make(chan struct{})
	m.loops.Go(func() {
		defer close(m.claimsDone)
		m.claimLoop(claimCtx)
	})
	m.loops.Go(func() { m.heartbeatLoop(ctx) })
	m.loops.Go(func() { m.listen(ctx) })
	return nil
}

// StopClaiming stops claiming work, so a member shutting down takes nothing
// new while what it runs flushes; the heartbeat goes on, so those runs keep
// their leases.
func (m *Member) StopClaiming() {
	if m.stopClaims != nil {
		m.stopClaims()
		<-m.claimsDone
	}
}

// Stop stops claiming (if not done yet), waits for the claimed work to end
// (the executor stops it) until ctx ends, resigns the leadership, and stops
// the heartbeat and the listener.
func (m *Member) Stop(ctx context.Context) {
	if m.stop == nil {
		return
	}
	m.StopClaiming()
	waited := make(chan struct{})
	go func() {
		m.work.Wait()
		close(waited)
	}()
	select {
	case <-waited:
	case <-ctx.Done():
	}
	m.stop()
	m.loops.Wait()
	m.leader.resign(context.WithoutCancel(ctx), m)
}

// kick wakes the claim loop.
func (m *Member) kick() { signal(m.wake) }

// SlotFreed is the executor's Config.SlotFreed: a freed slot may take the
// next pending run at once.
func (m *Member) SlotFreed() { m.kick() }

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Dispatch is the admission.Dispatcher of a cluster member: the run waits
// pending in the history for any member. Its plan is kept for this member's
// own claim, which the submit wakes; when this member has no free slot, the
// others are woken instead (on a history that carries wake-ups), so an idle
// member takes the run at once rather than at its next poll.
func (m *Member) Dispatch(a admission.Accepted) {
	m.plans.put(a.Record.RunID, a.Plan)
	m.kick()
	if st := m.exec.Stats(); st.InFlight < st.MaxConcurrent {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := m.store.Wake(ctx, db.WakeWork); err != nil {
		m.cfg.Logger.Debug("wake the members for a submitted run; they find it at their next poll", "run_id", a.Record.RunID, "error", err)
	}
}

// Status reports how many members heartbeated within the lease.
func (m *Member) Status(ctx context.Context) (members int, err error) {
	live, err := m.Members(ctx)
	return len(live), err
}

// Members lists the members that heartbeated within the lease, ordered by
// instance id.
func (m *Member) Members(ctx context.Context) ([]db.InstanceRecord, error) {
	return m.store.InstanceListLive(ctx, m.cfg.LeaseTTL)
}

// listen turns the wake-ups members send into this member's signals, until
// ctx ends. Without wake-ups (SQLite) the polls alone find work.
func (m *Member) listen(ctx context.Context) {
	err := m.store.Listen(ctx, func(topic db.WakeTopic) {
		switch topic {
		case db.WakeWork:
			m.shardsSeen.Store(true)
			m.kick()
		case db.WakeCancel:
			signal(m.cancels)
		case db.WakeLeader:
			signal(m.elect)
		}
	})
	if err != nil && !errors.Is(err, db.ErrNoWakeups) && ctx.Err() == nil {
		m.cfg.Logger.Warn("listen for wake-ups; polling alone", "error", err)
	}
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
