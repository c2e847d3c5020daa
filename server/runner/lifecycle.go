package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/server/redact"
)

// Terminal reasons, the `reason` label of faucet_runs_finished_total.
const (
	reasonOK        = "ok"
	reasonError     = "error"
	reasonCancelled = "cancelled"
	reasonTimeout   = "timeout"
	reasonShutdown  = "server_shutdown"
	reasonRecovered = "recovered"
)

// Error messages of runs the server ended.
const (
	msgShutdown  = "server shutdown before the run finished"
	msgRecovered = "faucet serve stopped before the run finished (recovered as failed at the next start)"
)

// outcome is how a run ended.
type outcome struct {
	status  db.RunStatus
	reason  string
	err     *string
	records int64
	invs    []db.InvocationRecord
}

func failed(reason, msg string) outcome {
	return outcome{status: db.StatusFailed, reason: reason, err: &msg}
}

// queue waits for an execution slot, racing a cancel request and shutdown so
// a run cancelled while queued ends at once.
func (r *Runner) queue(a *active, plan *pipeline.Plan, red *redact.Redactor) {
	defer r.wg.Done()
	ended := func(o outcome) {
		r.mu.Lock()
		r.queued--
		r.mu.Unlock()
		r.finalize(a, o, time.Time{}, red)
		r.release(a)
	}
	select {
	case <-a.cancel:
		ended(outcome{status: db.StatusCancelled, reason: reasonCancelled})
		return
	case <-r.shutdown:
		ended(failed(reasonShutdown, msgShutdown))
		return
	case r.slots <- struct{}{}:
	}
	// Prefer a cancel or shutdown that raced the slot.
	select {
	case <-a.cancel:
		<-r.slots
		ended(outcome{status: db.StatusCancelled, reason: reasonCancelled})
		return
	case <-r.shutdown:
		<-r.slots
		ended(failed(reasonShutdown, msgShutdown))
		return
	default:
	}
	r.mu.Lock()
	r.queued--
	r.inFlight++
	r.mu.Unlock()
	r.gauges()
	started := time.Now().UTC().Truncate(time.Microsecond)
	a.finalizeMu.Lock()
	running := *a.rec
	running.Status = db.StatusRunning
	running.StartedAt = &started
	a.rec = &running
	a.finalizeMu.Unlock()
	// Published beside the execution, not before it: a narrow update fenced
	// on the run still being queued, so it can never undo the terminal
	// record of a run that finished first.
	go func() {
		if _, err := r.store.RunStart(context.Background(), running.RunID, started); err != nil {
			r.log.Warn("mark run running", "run_id", running.RunID, "error", err)
		}
	}()
	r.execute(a, plan, red, r.freeSlot)
	r.release(a)
}

// freeSlot gives an execution slot back.
func (r *Runner) freeSlot() {
	<-r.slots
	r.mu.Lock()
	r.inFlight--
	r.mu.Unlock()
	r.gauges()
	if r.cfg.Cluster {
		r.kick()
	}
}

// release forgets a finished run.
func (r *Runner) release(a *active) {
	r.mu.Lock()
	delete(r.active, a.rec.RunID)
	r.mu.Unlock()
	r.gauges()
}

// execute runs one run that holds an execution slot and finalizes it. It is
// the one execution path of whole runs: the local queue calls it, and so
// does the cluster claim loop with a claimed record. stopped is called once
// the engine is done with the run, before the terminal record is written,
// so the slot serves the next run meanwhile.
func (r *Runner) execute(a *active, plan *pipeline.Plan, red *redact.Redactor, stopped func()) {
	started := time.Now().UTC()
	if a.rec.StartedAt != nil {
		started = *a.rec.StartedAt
	}
	logger := a.log.Logger()
	logger.Info("pipeline run starting", "invocations", len(plan.Invocations))
	o := r.perform(a, plan, red, logger)
	stopped()
	if a.owned && o.reason == reasonShutdown {
		r.handBack(a)
		return
	}
	logger.Info("pipeline run finished", "status", string(o.status), "records_written", o.records)
	r.finalize(a, o, started, red)
}

// perform executes plan for a, racing completion against the cancel,
// timeout and shutdown triggers, and returns how it ended. The records the
// sinks acknowledge are counted into a.records as they come.
func (r *Runner) perform(a *active, plan *pipeline.Plan, red *redact.Redactor, logger *slog.Logger) outcome {
	type result struct {
		res []pipeline.InvocationResult
		err error
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan result, 1)
	go func() {
		res, err := r.engine.Execute(ctx, a.rec.RunID, plan, logger, a.records.Store)
		done <- result{res, err}
	}()

	var timeout <-chan time.Time
	if secs := a.rec.TimeoutSecs; secs != nil && *secs > 0 {
		t := time.NewTimer(time.Duration(*secs) * time.Second)
		defer t.Stop()
		timeout = t.C
	}

	var trigger outcome
	select {
	case res := <-done:
		return classify(res.res, res.err, red)
	case <-a.cancel:
		trigger = outcome{status: db.StatusCancelled, reason: reasonCancelled}
	case <-r.shutdown:
		trigger = failed(reasonShutdown, msgShutdown)
	case <-timeout:
		trigger = failed(reasonTimeout, fmt.Sprintf("run exceeded timeout_secs (%ds)", *a.rec.TimeoutSecs))
	}
	// Cancel cooperatively: the engine stops the sources and lets the sinks
	// flush what they acknowledged, within a bounded grace.
	logger.Info("stopping run", "reason", trigger.reason)
	stop()
	grace := time.NewTimer(r.flushGrace())
	defer grace.Stop()
	select {
	case res := <-done:
		o := classify(res.res, res.err, red)
		if o.status == db.StatusFailed && o.reason == reasonError && !cancelled(res.err, res.res) {
			// A flush that failed for a real reason stays failed.
			return o
		}
		// A clean flush (or one that stopped on the cancel) ends with the
		// trigger's status and the partial counts.
		trigger.records, trigger.invs = o.records, o.invs
	case <-grace.C:
		logger.Warn("run did not flush within the grace period; finalizing it", "grace", r.flushGrace().String())
		trigger.records = a.records.Load()
	}
	return trigger
}

// flushGrace is the flush grace of a stopped run, shortened during shutdown
// so every run is finalized before the server's deadline.
func (r *Runner) flushGrace() time.Duration {
	g := r.cfg.FlushGrace
	r.mu.Lock()
	deadline := r.deadline
	r.mu.Unlock()
	if !deadline.IsZero() {
		// Keep a margin for writing the terminal record.
		left := time.Until(deadline) - time.Until(deadline)/10 - 100*time.Millisecond
		g = max(0, min(g, left))
	}
	return g
}

// cancelled reports whether the engine stopped because it was cancelled.
func cancelled(err error, res []pipeline.InvocationResult) bool {
	if errors.Is(err, context.Canceled) {
		return true
	}
	for _, inv := range res {
		if errors.Is(inv.Err, context.Canceled) {
			return true
		}
	}
	return false
}

// classify turns the engine's results into an outcome. Error texts are
// redacted here, before they reach the record or any response.
func classify(res []pipeline.InvocationResult, err error, red *redact.Redactor) outcome {
	o := outcome{status: db.StatusCompleted, reason: reasonOK, invs: make([]db.InvocationRecord, 0, len(res))}
	var failures []string
	for _, inv := range res {
		ir := db.InvocationRecord{
			RowID: inv.RowID, RecordsWritten: inv.RecordsWritten, DurationMS: inv.Duration.Milliseconds(),
			RecordsDeadLettered: inv.RecordsDeadLettered, RecordsDropped: inv.RecordsDropped,
		}
		if inv.Err != nil {
			msg := red.String(inv.Err.Error())
			ir.Error = &msg
			failures = append(failures, inv.RowID+": "+msg)
		}
		o.records += inv.RecordsWritten
		o.invs = append(o.invs, ir)
	}
	switch {
	case err != nil:
		msg := red.String(err.Error())
		o.status, o.reason, o.err = db.StatusFailed, reasonError, &msg
	case len(failures) > 0:
		msg := fmt.Sprintf("%d of %d invocation(s) failed: %s", len(failures), len(res), strings.Join(failures, "; "))
		o.status, o.reason, o.err = db.StatusFailed, reasonError, &msg
	}
	return o
}

// finalize writes the terminal record once per run, together with the log
// lines not persisted yet. It writes from the record it holds, not from a
// fresh read, so a store that cannot read the record (or lost it) still ends
// up with a terminal run. A claimed run's write is fenced on this instance
// still owning it: when a peer reclaimed it meanwhile, the result is
// discarded. Transient write failures are retried until the write lands.
func (r *Runner) finalize(a *active, o outcome, started time.Time, red *redact.Redactor) {
	a.finalizeMu.Lock()
	defer a.finalizeMu.Unlock()
	if a.finalized {
		return
	}
	a.finalized = true
	rec := *a.rec
	now := time.Now().UTC()
	rec.Status = o.status
	rec.FinishedAt = &now
	if rec.StartedAt == nil && !started.IsZero() {
		rec.StartedAt = &started
	}
	var elapsed time.Duration
	if rec.StartedAt != nil {
		elapsed = now.Sub(*rec.StartedAt)
		secs := elapsed.Seconds()
		rec.ElapsedSecs = &secs
	}
	rec.RecordsWritten = o.records
	rec.Invocations = o.invs
	if rec.Invocations == nil {
		rec.Invocations = []db.InvocationRecord{}
	}
	rec.Error = red.Ptr(o.err)
	a.rec = &rec

	lr := a.log
	if o.err != nil {
		lr.Append(slog.LevelError, "run "+string(o.status)+": "+*rec.Error)
	} else {
		lr.Append(slog.LevelInfo, "run "+string(o.status))
	}
	won := true
	err := lr.FlushWith(func(lines []db.RunLogLine, maxLines int) error {
		return r.retry(func(ctx context.Context) error {
			var err error
			won, err = r.store.RunFinish(ctx, db.RunFinal{Record: &rec, Owned: a.owned, Lines: lines, MaxLinesPerRun: maxLines})
			return err
		})
	})
	lr.Finish()
	switch {
	case err != nil:
		r.log.Error("write terminal run record", "run_id", rec.RunID, "status", rec.Status, "error", err)
	case !won:
		r.log.Warn("run was reclaimed by another instance while it ran here; discarding this result",
			"run_id", rec.RunID, "status", rec.Status, "records_written", rec.RecordsWritten)
		return
	}
	if r.metrics != nil {
		r.metrics.RunFinished(string(o.status), o.reason, elapsed, o.records)
	}
	r.log.Info("run finished", "run_id", rec.RunID, "status", rec.Status, "records_written", rec.RecordsWritten)
}

// retry calls write until it succeeds or fails for good: a transient store
// failure (a database restart) is retried with capped backoff for as long as
// the server runs, and until its shutdown deadline once it stops; a failure
// the store could not classify, a few times.
func (r *Runner) retry(write func(ctx context.Context) error) error {
	const unknownAttempts = 8
	delay := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := write(context.Background())
		if err == nil || !db.Retriable(err) || (db.TransienceOf(err) == db.Unknown && attempt >= unknownAttempts) {
			return err
		}
		r.mu.Lock()
		deadline := r.deadline
		r.mu.Unlock()
		if !deadline.IsZero() && time.Now().Add(delay).After(deadline) {
			return err
		}
		time.Sleep(delay)
		delay = min(2*delay, 2*time.Second)
	}
}

// CancelOutcome says what Cancel did.
type CancelOutcome int

// The outcomes of Cancel.
const (
	// CancelRequested: the run was queued or running; it is stopping (202).
	CancelRequested CancelOutcome = iota + 1
	// AlreadyTerminal: nothing to do (200).
	AlreadyTerminal
)

// Cancel asks a run to stop. A queued or pending run is finalized at once; a
// running run is cancelled cooperatively, by its owner when that is another
// instance (which sees the request at its next poll), and so are the shards
// of a sharded run wherever they execute.
func (r *Runner) Cancel(ctx context.Context, runID string) (CancelOutcome, error) {
	r.mu.Lock()
	a := r.active[runID]
	r.mu.Unlock()
	if a != nil && !a.owned {
		a.requestCancel()
		return CancelRequested, nil
	}
	if a != nil {
		// A claimed run: flag it in the store too, so the request survives
		// this instance losing the run to a peer.
		if _, err := r.store.RunRequestCancel(ctx, runID); err != nil {
			r.log.Warn("record cancel request", "run_id", runID, "error", err)
		}
		a.requestCancel()
		return CancelRequested, nil
	}
	rec, err := r.store.RunGet(ctx, runID)
	if errors.Is(err, db.ErrNotFound) {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("read run: %w", err)
	}
	if rec.Status.Terminal() {
		return AlreadyTerminal, nil
	}
	// Not ours: another instance (cluster mode) owns it.
	if ok, err := r.store.RunCancelPending(ctx, runID); err != nil {
		return 0, fmt.Errorf("cancel pending run: %w", err)
	} else if ok {
		return CancelRequested, nil
	}
	if ok, err := r.store.RunRequestCancel(ctx, runID); err != nil {
		return 0, fmt.Errorf("request run cancel: %w", err)
	} else if ok {
		r.cancelShards(runID)
		return CancelRequested, nil
	}
	return 0, ErrNotOwned
}

// Delete removes a terminal run with its logs and idempotency claims.
func (r *Runner) Delete(ctx context.Context, runID string) error {
	r.mu.Lock()
	_, running := r.active[runID]
	r.mu.Unlock()
	if running {
		return ErrNotTerminal
	}
	out, err := r.store.RunDelete(ctx, runID)
	if err != nil {
		return fmt.Errorf("delete run: %w", err)
	}
	switch out {
	case db.DeleteNotFound:
		return ErrNotFound
	case db.DeleteStillRunning:
		return ErrNotTerminal
	}
	return nil
}

// Get returns a run, with elapsed_secs and records_written live while it
// runs: the count the sinks acknowledged so far when it executes here, as a
// peer last recorded it otherwise, and for a sharded run the sum over its
// shards.
func (r *Runner) Get(ctx context.Context, runID string) (*db.RunRecord, error) {
	rec, err := r.store.RunGet(ctx, runID)
	if errors.Is(err, db.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read run: %w", err)
	}
	r.live(rec, time.Now())
	if rec.Status == db.StatusSharded {
		p, err := r.store.ShardProgress(ctx, runID)
		if err != nil {
			return nil, fmt.Errorf("read shard progress: %w", err)
		}
		rec.RecordsWritten = p.RecordsWritten + r.liveShardRecords(runID)
	}
	return rec, nil
}

// List returns a page of runs, newest first.
func (r *Runner) List(ctx context.Context, f db.ListFilter) (db.ListPage, error) {
	page, err := r.store.RunList(ctx, f)
	if err != nil {
		return db.ListPage{}, fmt.Errorf("list runs: %w", err)
	}
	now := time.Now()
	for i := range page.Runs {
		r.live(&page.Runs[i], now)
	}
	return page, nil
}

// live fills in the live fields of a run that has not finished.
func (r *Runner) live(rec *db.RunRecord, now time.Time) {
	if rec.Status.Terminal() {
		return
	}
	if rec.StartedAt != nil {
		secs := now.Sub(*rec.StartedAt).Seconds()
		rec.ElapsedSecs = &secs
	}
	r.mu.Lock()
	a := r.active[rec.RunID]
	r.mu.Unlock()
	if a != nil {
		rec.RecordsWritten = max(rec.RecordsWritten, a.records.Load())
	}
}
