// Package execution runs the runs (and the shards of runs) this process
// holds: it owns the execution slots, executes a run's plan racing its
// cancel, timeout and shutdown triggers, lets a stopped run flush within a
// grace, and writes how it ended. Finalize (finalize.go) is the one place a
// run this process executed becomes terminal; Config.Finalized is called
// after every such write, for what must follow a run's end.
package execution

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/redact"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/server/admission"
	"github.com/faucet-dev/faucet/server/metrics"
	"github.com/faucet-dev/faucet/server/runlog"
)

// Pipelines is what execution needs of the pipeline layer: execute a plan.
type Pipelines interface {
	// Execute runs plan, of run runID, until it completes or ctx is
	// cancelled; on cancellation the sinks flush what they acknowledged and
	// the partial results are returned with an error wrapping
	// context.Canceled. log receives the run's log lines; progress, when not
	// nil, the records the sinks acknowledged so far, after every
	// acknowledged batch. runID names the run in what the execution leaves
	// behind (dead letters, the local-outputs ledger).
	Execute(ctx context.Context, runID string, plan *pipeline.Plan, log *slog.Logger, progress func(records int64)) ([]pipeline.InvocationResult, error)
}

// Config configures an Executor. Zero values take the defaults below.
type Config struct {
	// MaxConcurrent runs (and shards) execute at once.
	MaxConcurrent int
	// FlushGrace is how long a cancelled or timed-out run may take to flush
	// before it is finalized regardless.
	FlushGrace time.Duration
	// StartDelay is how long a local run executes before its start is
	// written: a run that ends sooner is written once, when it ends, with
	// its start time. Until then this process answers for it as running,
	// and the history holds it queued.
	StartDelay time.Duration
	// Clock stamps starts and ends; nil means time.Now.
	Clock func() time.Time
	// Logger and Metrics receive what execution reports; nil discards it.
	Logger  *slog.Logger
	Metrics *metrics.Metrics
	// Finalized, when set, is told of every run this process finalized,
	// after its terminal record was written and the run let go (a cancel
	// of it answers that it ended): the seam for what follows a run's end
	// (recording what it wrote, completion callbacks).
	Finalized func(ctx context.Context, f Final)
	// ShardLineage, when set, is what a shard that completed keeps of its
	// engine results with its result (db.ShardResult.Lineage), so the run's
	// one catalog record can be made from all its shards.
	ShardLineage func(results []pipeline.InvocationResult) json.RawMessage
	// SlotFreed, when set, is called each time an execution slot frees, so
	// a cluster member claims more work.
	SlotFreed func()
	// Split, when set, is offered each local run once it holds its slot
	// and started, before it executes: it reports true when it took the
	// run over (split it into shards and let it go with Forget, or ended
	// it with Finalize), false to have the run execute whole.
	Split func(t *Task, plan *pipeline.Plan) bool
	// Ledger, when set, holds the ledger entries of the files each run's
	// sinks wrote, for its terminal write to record in its own transaction.
	Ledger Ledger
}

// Ledger holds the local-outputs ledger's entries of the runs executing
// here (server/outputs).
type Ledger interface {
	// Take hands over the entries of runID not written yet.
	Take(runID string) []db.LocalOutputWrite
	// Write writes entries on their own: those of a write that did not
	// land, or of an end that carries none.
	Write(ctx context.Context, ws []db.LocalOutputWrite)
}

// DefaultMaxConcurrent is the default number of runs executing at once: runs
// mostly wait on their connector processes, so twice the CPUs, at least 4.
func DefaultMaxConcurrent() int { return max(4, 2*runtime.NumCPU()) }

// Defaults for Config.
const (
	DefaultFlushGrace = 30 * time.Second
	DefaultStartDelay = 50 * time.Millisecond
)

func (c Config) withDefaults() Config {
	if c.MaxConcurrent <= 0 {
		c.MaxConcurrent = DefaultMaxConcurrent()
	}
	if c.FlushGrace <= 0 {
		c.FlushGrace = DefaultFlushGrace
	}
	if c.StartDelay <= 0 {
		c.StartDelay = DefaultStartDelay
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Final is a run this process finalized.
type Final struct {
	// Record is the terminal record as written.
	Record db.RunRecord
	// Reason is why it ended (Reason*).
	Reason string
	// Plan is what the run executed, nil for a run that never executed
	// (cancelled while queued, a config that no longer loads); Results are
	// the engine's results of it, nil too when its flush was cut off by the
	// grace.
	Plan    *pipeline.Plan
	Results []pipeline.InvocationResult
}

// Executor executes the runs and shards this process holds.
type Executor struct {
	cfg   Config
	store db.Store
	pipes Pipelines
	logs  *runlog.Hub

	// slots holds one token per executing run or shard.
	slots chan struct{}
	// shutdown is closed when Stop begins; every execution stops.
	shutdown chan struct{}
	// writes bounds the retries of terminal writes: it ends once Stop's
	// deadline passes.
	writes      context.Context
	stopWrites  context.CancelFunc
	stopOnce    sync.Once
	goroutines  sync.WaitGroup
	held        sync.WaitGroup
	deadlineSet atomic.Bool
	deadline    atomic.Int64 // unix nanos of Stop's deadline

	mu       sync.Mutex
	inFlight int
	// closed: Stop began, and nothing more is held.
	closed bool
	// runs are the whole runs held here, queued or executing, by run id;
	// shards the shards executing here, by run id then shard id.
	runs   map[string]*Task
	shards map[string]map[string]*Task
}

// New returns an Executor over store, executing plans with pipes and
// capturing logs in logs. Start it before dispatching to it.
func New(cfg Config, store db.Store, pipes Pipelines, logs *runlog.Hub) *Executor {
	cfg = cfg.withDefaults()
	writes, stop := context.WithCancel(context.Background())
	return &Executor{
		cfg: cfg, store: store, pipes: pipes, logs: logs,
		slots:    make(chan struct{}, cfg.MaxConcurrent),
		shutdown: make(chan struct{}),
		writes:   writes, stopWrites: stop,
		runs:   map[string]*Task{},
		shards: map[string]map[string]*Task{},
	}
}

// Config returns the effective configuration.
func (e *Executor) Config() Config { return e.cfg }

// Start makes the executor ready; it runs nothing until runs arrive.
func (e *Executor) Start(context.Context) error { return nil }

// Stop stops every execution: queued runs are failed, running ones are
// cancelled so they flush (a claimed one is handed back to the cluster
// instead), and Stop waits for each to end until ctx ends. What has not
// ended then is finalized as failed ("server shutdown") or handed back
// directly. Terminal writes are retried until ctx ends.
func (e *Executor) Stop(ctx context.Context) error {
	first := false
	e.stopOnce.Do(func() {
		first = true
		if d, ok := ctx.Deadline(); ok {
			e.deadline.Store(d.UnixNano())
			e.deadlineSet.Store(true)
		}
		e.mu.Lock()
		e.closed = true
		e.mu.Unlock()
		close(e.shutdown)
	})
	if !first {
		return nil
	}
	defer e.stopWrites()
	// Retries of terminal writes end with the grace.
	stop := context.AfterFunc(ctx, e.stopWrites)
	defer stop()
	if waitCtx(ctx, &e.held) {
		waitCtx(ctx, &e.goroutines)
		return nil
	}
	left := e.heldTasks()
	for _, t := range left {
		if t.owned {
			e.handBack(t)
			continue
		}
		e.finalize(t, Failed(ReasonShutdown, MsgShutdown))
	}
	if len(left) > 0 {
		return fmt.Errorf("%d run(s) did not stop within the shutdown grace and were failed", len(left))
	}
	return errors.New("shutdown grace expired")
}

// waitCtx waits for wg until ctx ends and reports whether wg finished.
func waitCtx(ctx context.Context, wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// Closing reports whether Stop has begun.
func (e *Executor) Closing() bool {
	select {
	case <-e.shutdown:
		return true
	default:
		return false
	}
}

// Stats is a snapshot of the execution slots.
type Stats struct {
	InFlight, MaxConcurrent int
}

// Stats returns the slots' occupancy.
func (e *Executor) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return Stats{InFlight: e.inFlight, MaxConcurrent: e.cfg.MaxConcurrent}
}

// gauge publishes the in-flight count.
func (e *Executor) gauge() {
	if e.cfg.Metrics == nil {
		return
	}
	e.mu.Lock()
	f := e.inFlight
	e.mu.Unlock()
	e.cfg.Metrics.InFlight.Set(float64(f))
}

// TakeSlots takes up to n free execution slots without waiting and returns
// how many it took. A cluster member takes a slot for each item before it
// claims it, so a claimed item never waits; it gives back with ReturnSlots
// what it did not claim.
func (e *Executor) TakeSlots(n int) int {
	if e.Closing() {
		return 0
	}
	took := 0
	for took < n {
		select {
		case e.slots <- struct{}{}:
			took++
		default:
			return took
		}
	}
	return took
}

// AwaitSlot waits for a free execution slot and takes it, in turn with the
// local runs queued for one (the slots are handed out first come, first
// served), so shards queued behind runs, and runs behind shards, each wait
// a bounded time. It reports false, holding nothing, when ctx ends or Stop
// begins first. The caller gives the slot back with ReturnSlots or adopts
// a shard into it (AdoptShard).
func (e *Executor) AwaitSlot(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-e.shutdown:
		return false
	case e.slots <- struct{}{}:
	}
	if ctx.Err() != nil || e.Closing() {
		<-e.slots
		return false
	}
	return true
}

// ReturnSlots gives back n slots TakeSlots took and nothing used.
func (e *Executor) ReturnSlots(n int) {
	for range n {
		<-e.slots
	}
}

// Dispatch queues a run admission accepted for an execution slot. It is the
// admission.Dispatcher of a server outside a cluster.
func (e *Executor) Dispatch(a admission.Accepted) {
	t := e.newTask(a.Record, false, nil, e.logs.Open(a.Record.RunID, a.Redactor), a.Redactor)
	t.log.Append(slog.LevelInfo, "run queued")
	if !e.hold(t) {
		// Accepted as Stop began: it ends like the queued runs Stop ends.
		a.Dequeued()
		e.finalize(t, Failed(ReasonShutdown, MsgShutdown))
		return
	}
	e.goroutines.Go(func() { e.queue(t, a.Plan, a.Dequeued) })
}

// Adopt takes over a run claimed from the cluster, for which the caller took
// a slot: the run is held (cancel and shutdown reach it) and logs its
// attempt's part. The caller then executes it (Execute), ends it
// (Finalize), or lets it go (Forget). A run claimed as Stop began is handed
// back to the cluster instead, and Adopt returns nil.
func (e *Executor) Adopt(rec db.RunRecord, red *redact.Redactor) *Task {
	log := e.logs.OpenPart(rec.RunID, rec.RunID, runlog.WholeRun(rec.Attempt), red)
	return e.adopt(e.newTask(&rec, true, nil, log, red))
}

// AdoptShard takes over a shard claimed from the cluster, for which the
// caller took a slot, like Adopt; the caller executes it with ExecuteShard.
func (e *Executor) AdoptShard(cs db.ClaimedShard, red *redact.Redactor) (*Task, error) {
	part, err := runlog.ShardPart(cs.ShardID, cs.Attempt)
	if err != nil {
		return nil, err
	}
	rec := cs.Run
	log := e.logs.OpenPart(cs.RunID+"/"+cs.ShardID, cs.RunID, part, red)
	return e.adopt(e.newTask(&rec, true, &cs, log, red)), nil
}

// adopt holds a claimed task in the slot its claimer took, or hands it back
// when Stop began.
func (e *Executor) adopt(t *Task) *Task {
	t.slot.Store(true)
	e.startSlot()
	if t.shard != nil && e.cfg.Metrics != nil {
		e.cfg.Metrics.ShardsInFlight.Inc()
	}
	if !e.hold(t) {
		e.freeSlot(t)
		e.handBack(t)
		return nil
	}
	return t
}

// startSlot counts a slot taken into use.
func (e *Executor) startSlot() {
	e.mu.Lock()
	e.inFlight++
	e.mu.Unlock()
	e.gauge()
}

// hold registers t, so cancels, reads and shutdown find it, and reports
// whether it did: once Stop began nothing more is held.
func (e *Executor) hold(t *Task) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	// Under the lock Stop takes before it waits, so every Add happens
	// before that Wait.
	e.held.Add(1)
	t.held = true
	if t.shard == nil {
		e.runs[t.runID] = t
		return true
	}
	if e.shards[t.runID] == nil {
		e.shards[t.runID] = map[string]*Task{}
	}
	e.shards[t.runID][t.shard.ShardID] = t
	return true
}

// release forgets t, which ended; its slot must be free already.
func (e *Executor) release(t *Task) {
	if !t.released.CompareAndSwap(false, true) {
		return
	}
	e.mu.Lock()
	if t.shard == nil {
		if e.runs[t.runID] == t {
			delete(e.runs, t.runID)
		}
	} else if byShard := e.shards[t.runID]; byShard[t.shard.ShardID] == t {
		delete(byShard, t.shard.ShardID)
		if len(byShard) == 0 {
			delete(e.shards, t.runID)
		}
	}
	held := t.held
	e.mu.Unlock()
	if t.shard != nil && e.cfg.Metrics != nil {
		e.cfg.Metrics.ShardsInFlight.Dec()
	}
	if held {
		e.held.Done()
	}
}

// freeSlot gives t's execution slot back, once.
func (e *Executor) freeSlot(t *Task) {
	if !t.slot.CompareAndSwap(true, false) {
		return
	}
	<-e.slots
	e.mu.Lock()
	e.inFlight--
	e.mu.Unlock()
	e.gauge()
	if e.cfg.SlotFreed != nil {
		e.cfg.SlotFreed()
	}
}

// heldTasks lists every task held now.
func (e *Executor) heldTasks() []*Task {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]*Task, 0, len(e.runs))
	for _, t := range e.runs {
		out = append(out, t)
	}
	for _, byShard := range e.shards {
		for _, t := range byShard {
			out = append(out, t)
		}
	}
	return out
}

// Owned lists the tasks held for the cluster (claimed runs and shards), for
// the heartbeat that renews their leases.
func (e *Executor) Owned() []*Task {
	all := e.heldTasks()
	out := all[:0]
	for _, t := range all {
		if t.owned {
			out = append(out, t)
		}
	}
	return out
}

// CancelRun asks the whole run runID executing here to stop, and reports
// whether it is held here.
func (e *Executor) CancelRun(runID string) bool {
	e.mu.Lock()
	t := e.runs[runID]
	e.mu.Unlock()
	if t != nil {
		t.requestCancel()
	}
	return t != nil
}

// CancelShards asks the shards of runID executing here to stop.
func (e *Executor) CancelShards(runID string) {
	e.mu.Lock()
	var shards []*Task
	for _, t := range e.shards[runID] {
		shards = append(shards, t)
	}
	e.mu.Unlock()
	for _, t := range shards {
		t.requestCancel()
	}
}

// liveShardRecords is what the shards of runID executing here acknowledged
// so far.
func (e *Executor) liveShardRecords(runID string) int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	var n int64
	for _, t := range e.shards[runID] {
		n += t.records.Load()
	}
	return n
}

// queue waits for an execution slot, racing a cancel request and shutdown so
// a run cancelled while queued ends at once, then executes the run.
func (e *Executor) queue(t *Task, plan *pipeline.Plan, dequeued func()) {
	ended := func(o Outcome) {
		dequeued()
		e.finalize(t, o)
	}
	select {
	case <-t.cancel:
		ended(Cancelled(0))
		return
	case <-e.shutdown:
		ended(Failed(ReasonShutdown, MsgShutdown))
		return
	case e.slots <- struct{}{}:
	}
	t.slot.Store(true)
	// Prefer a cancel or shutdown that raced the slot.
	select {
	case <-t.cancel:
		e.releaseUnusedSlot(t)
		ended(Cancelled(0))
		return
	case <-e.shutdown:
		e.releaseUnusedSlot(t)
		ended(Failed(ReasonShutdown, MsgShutdown))
		return
	default:
	}
	dequeued()
	e.startSlot()
	started := e.now()
	t.start(started)
	e.announceStart(t, started)
	if e.cfg.Split != nil && e.cfg.Split(t, plan) {
		return
	}
	e.Execute(t, plan)
}

// WriteStart writes a local run's start now rather than after StartDelay:
// a run about to be split into shards must be running in the history
// first (db RunShard). The write is fenced on the run still being queued,
// so it never undoes a later state.
func (e *Executor) WriteStart(t *Task) error {
	at, ok := t.running()
	if !ok {
		return fmt.Errorf("write the start of run %s: it is not executing", t.runID)
	}
	return e.retry(func(ctx context.Context) error {
		_, err := e.store.RunStart(ctx, t.runID, at)
		return err
	})
}

// releaseUnusedSlot gives back a slot t took but never used.
func (e *Executor) releaseUnusedSlot(t *Task) {
	if t.slot.CompareAndSwap(true, false) {
		<-e.slots
	}
}

// announceStart writes a local run's start once it has executed for
// StartDelay: a run that ends sooner carries its start in its one terminal
// write. The write holds the run's end lock, so a finalize waits for it, and
// it is fenced on the run still being queued, so it never undoes a terminal
// record.
func (e *Executor) announceStart(t *Task, started time.Time) {
	t.endMu.Lock()
	defer t.endMu.Unlock()
	t.startTimer = time.AfterFunc(e.cfg.StartDelay, func() {
		t.endMu.Lock()
		defer t.endMu.Unlock()
		if t.ended {
			return
		}
		if _, err := e.store.RunStart(context.WithoutCancel(e.writes), t.runID, started); err != nil {
			e.cfg.Logger.Warn("mark run running", "run_id", t.runID, "error", err)
		}
	})
}

// now is the executor's clock at the precision the history keeps.
func (e *Executor) now() time.Time { return e.cfg.Clock().UTC().Truncate(time.Microsecond) }

// flushGrace is the flush grace of a stopped run, shortened during shutdown
// so every run is finalized before Stop's deadline.
func (e *Executor) flushGrace() time.Duration {
	g := e.cfg.FlushGrace
	if e.deadlineSet.Load() {
		deadline := time.Unix(0, e.deadline.Load())
		// Keep a margin for writing the terminal record.
		left := time.Until(deadline) - time.Until(deadline)/10 - 100*time.Millisecond
		g = max(0, min(g, left))
	}
	return g
}

// retry calls write until it succeeds or fails for good: a transient store
// failure (a database restart) is retried with capped backoff for as long as
// the server runs, and until Stop's deadline once it stops; a failure the
// store could not classify, a few times. Each attempt runs to its end (the
// store bounds it), so a write begun just before the deadline still lands;
// only the waits between attempts end with the deadline.
func (e *Executor) retry(write func(ctx context.Context) error) error {
	const unknownAttempts = 8
	delay := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := write(context.WithoutCancel(e.writes))
		if err == nil || !db.Retriable(err) || (db.TransienceOf(err) == db.Unknown && attempt >= unknownAttempts) {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-e.writes.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// Retry retries write the way terminal writes are retried (see retry), for
// the cluster's writes on the same path: a split, a sharded run's finalize.
func (e *Executor) Retry(write func(ctx context.Context) error) error { return e.retry(write) }
