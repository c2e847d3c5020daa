package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/faucet-dev/faucet/internal/redact"
	"github.com/faucet-dev/faucet/plugins/connector"
)

// Batch is a run of records on its way from a source to a sink: Count JSON
// objects in Records, each followed by "\n" (JSON Lines).
type Batch struct {
	// Seq numbers the batches of one session from 1 upwards.
	Seq     uint64
	Count   int
	Records []byte
}

// Connectors opens sessions with connectors for the executor. The plugin
// host implements it with plugin processes; an in-process implementation
// runs the same connector code without the process boundary.
type Connectors interface {
	// OpenSource starts reading c, or only the given shard of it when shard
	// is non-nil. Cancelling ctx stops the source.
	OpenSource(ctx context.Context, c ConnectorConfig, shard *SourceShard) (SourceSession, error)
	// OpenSink starts a write session with c. acked is called, from any
	// goroutine, with the record count of each batch the sink acknowledges.
	OpenSink(ctx context.Context, c ConnectorConfig, acked func(records int)) (SinkSession, error)
}

// SourceSession is one read of a source.
type SourceSession interface {
	// Recv returns the next batch, or io.EOF after the last one. The batch's
	// Records belong to the caller.
	Recv() (Batch, error)
	// Close stops the read if it is still running and releases the
	// connector. It is safe to call after Recv failed.
	Close() error
}

// SinkSession is one write session of a sink. The caller sends batches and
// ends with exactly one of Commit or Abort.
type SinkSession interface {
	// Send hands a batch to the sink. It returns once the batch is on its
	// way, blocking while the sink is behind (back-pressure), without
	// waiting for the acknowledgement.
	Send(b Batch) error
	// Commit tells the sink no more batches follow, waits until it has
	// flushed and committed every acknowledged batch, and returns the number
	// of records it committed.
	Commit(ctx context.Context) (int64, error)
	// Abort tells the sink to discard the session and waits until it has.
	Abort(ctx context.Context) error
}

// Piper is implemented by Connectors that can stream a source straight into
// a sink, the records never passing through the executor's process. The
// executor prefers it: with plugins, records then cross one process
// boundary instead of two.
type Piper interface {
	// OpenPipe starts moving source (or its shard) into sink. acked is
	// called with the record count of each batch the sink acknowledges.
	OpenPipe(ctx context.Context, source ConnectorConfig, shard *SourceShard, sink ConnectorConfig, acked func(records int)) (PipeSession, error)
}

// ErrNoPipe is OpenPipe's answer when the pair cannot be piped; the
// executor then relays the batches itself.
var ErrNoPipe = errors.New("source and sink cannot be piped")

// PipeSession is one source-to-sink transfer. The caller waits for it and
// may stop it meanwhile, from another goroutine.
type PipeSession interface {
	// Wait blocks until the transfer ends and returns the number of records
	// the sink committed: all of them, or after Stop the acknowledged ones.
	// On error the sink has discarded the session.
	Wait(ctx context.Context) (int64, error)
	// Stop stops the source, lets the sink commit exactly the batches it
	// acknowledged, and returns how many records that is.
	Stop(ctx context.Context) (int64, error)
	// Abort stops the source and has the sink discard the session.
	Abort(ctx context.Context) error
}

// ShardPlanner splits a source into shards for cluster mode, where each
// shard runs as its own invocation (Invocation.SourceShard).
type ShardPlanner interface {
	Shards(ctx context.Context, c ConnectorConfig, count int) ([]SourceShard, error)
}

// SourceShard is one part of a split source, as the connector described it.
type SourceShard = connector.Shard

// IsTransient reports whether err is a connector failure that may succeed
// when retried: err or an error it wraps has a Transient method returning
// true.
func IsTransient(err error) bool {
	var t interface{ Transient() bool }
	return errors.As(err, &t) && t.Transient()
}

// ErrTargetKept is the error of a cancelled invocation whose sink overwrites
// its target: a partial copy must not replace a complete one, so the sink
// discarded the session and the target keeps its previous contents.
var ErrTargetKept = errors.New("the sink overwrites its target, which keeps its previous contents")

// ErrNotRun is the error of an invocation that never started, because an
// earlier one failed under on_error: stop or because the run was cancelled.
var ErrNotRun = errors.New("not run")

// Progress is a snapshot of a running plan, reported whenever a sink
// acknowledges a batch.
type Progress struct {
	// RowID is the invocation whose batch was acknowledged.
	RowID string
	// Records acknowledged by the invocation's sink so far.
	RowRecords int64
	// Records acknowledged by every sink of the plan so far.
	Records int64
	// Elapsed since Execute started.
	Elapsed time.Duration
}

// ExecuteOptions configures Execute.
type ExecuteOptions struct {
	// Connectors opens the connector sessions; required.
	Connectors Connectors
	// Progress, if set, is called after every acknowledged batch; calls are
	// serialised.
	Progress func(Progress)
	// Logger receives one line per invocation start, retry and end; nil
	// logs nowhere.
	Logger *slog.Logger
	// ConnectorLogger receives what the connectors log during the plan's
	// sessions, tagged with the row and the connector and with the plan's
	// secrets masked (see SessionLog); nil means Logger, and with neither
	// set the lines stay in the Connectors' own log, masked all the same.
	ConnectorLogger *slog.Logger
	// BufferBatches bounds the batches held between a source and its sink;
	// 0 means 4. Together with the transport's own flow control it keeps
	// memory flat whatever the size of the input.
	BufferBatches int
	// FlushTimeout bounds how long a sink may take to commit after the run
	// is cancelled; 0 means one minute.
	FlushTimeout time.Duration
	// Output, if set, is called with every file a committed sink session of
	// the invocation rowID created or replaced (the dead-letter file too),
	// from any goroutine.
	Output func(rowID string, f OutputFile)
	// RunID names the run in its dead letters.
	RunID string
	// Files opens the dead-letter file; nil opens paths as given.
	Files FileOpener
	// Observe asks the connectors to report the datasets they read and
	// wrote (InvocationResult.Lineage), for the catalog.
	Observe bool
}

// Execute runs every invocation of plan, at most plan.Execution.MaxConcurrent
// at once, and returns one result per invocation in plan order. The error is
// nil when every invocation succeeded; otherwise it names how many failed
// and the first failure. Cancelling ctx stops the sources, lets each sink
// commit the batches it acknowledged (a sink that overwrites its target
// discards them instead: ErrTargetKept), and marks unstarted invocations
// ErrNotRun.
func Execute(ctx context.Context, plan *Plan, opts ExecuteOptions) ([]InvocationResult, error) {
	if opts.Connectors == nil {
		return nil, errors.New("execute: no connectors")
	}
	if opts.BufferBatches <= 0 {
		opts.BufferBatches = 4
	}
	if opts.FlushTimeout <= 0 {
		opts.FlushTimeout = time.Minute
	}
	if opts.ConnectorLogger == nil {
		opts.ConnectorLogger = opts.Logger
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	e := &executor{plan: plan, opts: opts, start: time.Now(), redact: redact.New(plan.Secrets)}
	results := make([]InvocationResult, len(plan.Invocations))
	workers := max(1, plan.Execution.MaxConcurrent)

	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		stopped bool
	)
	sem := make(chan struct{}, workers)
	for i := range plan.Invocations {
		inv := &plan.Invocations[i]
		sem <- struct{}{}
		mu.Lock()
		skip := stopped
		mu.Unlock()
		if skip || ctx.Err() != nil {
			<-sem
			results[i] = InvocationResult{RowID: inv.RowID, Err: e.notRun(ctx)}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i] = e.invoke(ctx, inv)
			if results[i].Err != nil && plan.Execution.OnError == OnErrorStop {
				mu.Lock()
				stopped = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return results, summarize(plan, results)
}

func (e *executor) notRun(ctx context.Context) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w: the run was cancelled (%w)", ErrNotRun, context.Cause(ctx))
	}
	return fmt.Errorf("%w: an earlier invocation failed and on_error is stop", ErrNotRun)
}

// summarize is Execute's error: nil when all succeeded. The shards of a
// split run are counted as such ("k/n shard(s) failed").
func summarize(plan *Plan, results []InvocationResult) error {
	var first *InvocationResult
	failed, notRun := 0, 0
	for i := range results {
		switch err := results[i].Err; {
		case err == nil:
		case errors.Is(err, ErrNotRun):
			notRun++
		default:
			failed++
			if first == nil {
				first = &results[i]
			}
		}
	}
	switch {
	case first == nil && notRun == 0:
		return nil
	case first == nil:
		return fmt.Errorf("%d of %d invocations not run: %w", notRun, len(results), firstErr(results))
	case plan.SplitFrom != "":
		return fmt.Errorf("%d/%d shard(s) failed; first, %s: %w", failed, len(results), first.RowID, first.Err)
	case len(results) == 1:
		return first.Err
	case notRun > 0:
		return fmt.Errorf("%d of %d invocations failed, %d not run; first, %s: %w", failed, len(results), notRun, first.RowID, first.Err)
	}
	return fmt.Errorf("%d of %d invocations failed; first, %s: %w", failed, len(results), first.RowID, first.Err)
}

func firstErr(results []InvocationResult) error {
	for _, r := range results {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

type executor struct {
	plan   *Plan
	opts   ExecuteOptions
	start  time.Time
	redact *redact.Redactor

	progressMu sync.Mutex
	total      int64
}

// invoke runs one invocation, retrying transient connector failures as the
// plan's Retry says.
func (e *executor) invoke(ctx context.Context, inv *Invocation) InvocationResult {
	start := time.Now()
	log := e.opts.Logger.With("row_id", inv.RowID, "source", inv.Source.Type, "sink", inv.Sink.Type)
	log.Info("invocation started")
	sessions := SessionLog{Secrets: e.plan.Secrets}
	if e.opts.ConnectorLogger != nil {
		sessions.Logger = e.opts.ConnectorLogger.With("row_id", inv.RowID)
	}
	ctx = WithSessionLog(ctx, sessions)
	if e.opts.Observe {
		ctx = WithObservation(ctx)
	}
	if out := e.opts.Output; out != nil {
		ctx = WithSessionReport(ctx, SessionReport{Output: func(f OutputFile) { out(inv.RowID, f) }})
	}
	attempts := max(1, e.plan.Retry.MaxAttempts)
	backoff := e.plan.Retry.InitialBackoff
	var (
		written, letters, dropped int64
		lineage                   *Lineage
		err                       error
	)
	for attempt := 1; ; attempt++ {
		written, letters, dropped, lineage, err = e.attemptWithDeadLetters(ctx, inv)
		if err == nil || attempt >= attempts || ctx.Err() != nil || !IsTransient(err) {
			break
		}
		log.Warn("invocation failed, retrying", "attempt", attempt, "backoff", backoff, "error", e.redact.String(err.Error()))
		if !sleep(ctx, backoff) {
			err = fmt.Errorf("cancelled while waiting to retry (%w) after: %w", context.Cause(ctx), err)
			break
		}
		backoff = min(backoff*2, max(e.plan.Retry.MaxBackoff, backoff))
	}
	res := InvocationResult{RowID: inv.RowID, RecordsWritten: written, RecordsDeadLettered: letters, RecordsDropped: dropped, Duration: time.Since(start)}
	if err != nil {
		res.Err = e.redact.Error(err)
		log.Error("invocation failed", "records_written", written, "duration", res.Duration, "error", res.Err)
	} else {
		log.Info("invocation finished", "records_written", written, "duration", res.Duration)
		res.Lineage = lineage
	}
	if letters > 0 {
		log.Warn("records the sink refused were dead-lettered", "records", letters, "dlq", e.plan.DeadLetter.Path)
	}
	if dropped > 0 {
		log.Warn("records the sink refused were dropped", "records", dropped)
	}
	return res
}

// attemptWithDeadLetters is one attempt, with the records its sink refuses
// dead-lettered or dropped as the plan says: they count once the sink
// committed, and an attempt whose sink rolled back leaves none. A
// successful attempt also returns what its sessions observed, when Observe
// asked.
func (e *executor) attemptWithDeadLetters(ctx context.Context, inv *Invocation) (written, letters, dropped int64, lineage *Lineage, err error) {
	dl := e.newDeadLetters(inv)
	if dl == nil {
		written, _, lineage, err = e.attempt(ctx, inv)
		return written, 0, 0, lineage, err
	}
	written, committed, lineage, err := e.attempt(dl.attach(ctx), inv)
	if !committed {
		dl.discard()
		return written, 0, 0, nil, err
	}
	letters, dropped, derr := dl.commit()
	if err == nil {
		err = derr
	}
	return written, letters, dropped, lineage, err
}

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// received is what the reader goroutine hands the writer: a batch, or the
// end of the source (err is io.EOF on a clean end).
type received struct {
	b   Batch
	err error
}

// attempt streams one invocation's source into its sink once. On success
// and on cancellation the sink commits what it acknowledged; on any other
// failure it aborts, so a retry starts from a clean sink. committed says
// whether the sink committed; lineage is what the sessions of a successful
// attempt observed.
func (e *executor) attempt(ctx context.Context, inv *Invocation) (n int64, committed bool, lineage *Lineage, err error) {
	if p, ok := e.opts.Connectors.(Piper); ok {
		if n, committed, lineage, err := e.pipe(ctx, p, inv); !errors.Is(err, ErrNoPipe) {
			return n, committed, lineage, err
		}
	}
	src, err := e.opts.Connectors.OpenSource(ctx, inv.Source, inv.SourceShard)
	if err != nil {
		return 0, false, nil, e.cancelled(ctx, err)
	}
	defer src.Close()

	// The first batch comes before the sink is opened: a source that cannot
	// start (a missing file, a bad query) fails without touching the sink.
	first, err := src.Recv()
	if err != nil && err != io.EOF {
		return 0, false, nil, e.cancelled(ctx, err)
	}
	firstErr := err

	acks := e.newAcks(inv.RowID)
	sink, err := e.opts.Connectors.OpenSink(context.WithoutCancel(ctx), inv.Sink, acks.add)
	if err != nil {
		return 0, false, nil, e.cancelled(ctx, err)
	}

	ch := make(chan received, e.opts.BufferBatches)
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(ch)
		if firstErr == io.EOF {
			ch <- received{err: io.EOF}
			return
		}
		b, err := first, error(nil)
		for {
			select {
			case ch <- received{b: b}:
			case <-done:
				return
			}
			if b, err = src.Recv(); err != nil {
				select {
				case ch <- received{err: err}:
				case <-done:
				}
				return
			}
		}
	}()

	for {
		var r received
		select {
		case <-ctx.Done():
			n, committed, err := e.commitCancelled(ctx, inv, sink, acks.forget)
			return n, committed, nil, err
		case r = <-ch:
		}
		switch {
		case r.err == io.EOF:
			n, err := sink.Commit(ctx)
			if err != nil {
				acks.forget()
				return 0, false, nil, e.cancelled(ctx, fmt.Errorf("commit: %w", err))
			}
			return n, true, e.lineage(src, sink), nil
		case r.err != nil:
			if ctx.Err() != nil {
				n, committed, err := e.commitCancelled(ctx, inv, sink, acks.forget)
				return n, committed, nil, err
			}
			e.abort(ctx, sink, acks.forget)
			return 0, false, nil, r.err
		}
		if err := sink.Send(r.b); err != nil {
			e.abort(ctx, sink, acks.forget)
			return 0, false, nil, e.cancelled(ctx, err)
		}
	}
}

// pipe is attempt for connectors that stream source to sink themselves.
func (e *executor) pipe(ctx context.Context, p Piper, inv *Invocation) (int64, bool, *Lineage, error) {
	acks := e.newAcks(inv.RowID)
	session, err := p.OpenPipe(context.WithoutCancel(ctx), inv.Source, inv.SourceShard, inv.Sink, acks.add)
	if err != nil {
		return 0, false, nil, e.cancelled(ctx, err)
	}
	type outcome struct {
		n   int64
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		n, err := session.Wait(context.WithoutCancel(ctx))
		done <- outcome{n, err}
	}()
	select {
	case o := <-done:
		if o.err != nil {
			acks.forget()
			return 0, false, nil, o.err
		}
		return o.n, true, e.lineage(session, session), nil
	case <-ctx.Done():
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.FlushTimeout)
	defer cancel()
	if inv.SinkWriteMode == WriteModeOverwrite {
		err := session.Abort(fctx)
		<-done
		acks.forget()
		return 0, false, nil, e.targetKept(ctx, inv, err)
	}
	n, err := session.Stop(fctx)
	<-done
	if err != nil {
		acks.forget()
		return 0, false, nil, fmt.Errorf("cancelled (%w); committing the acknowledged batches failed: %w", context.Cause(ctx), err)
	}
	return n, true, nil, fmt.Errorf("cancelled after %d records were committed: %w", n, context.Cause(ctx))
}

// lineage collects what a successful attempt's sessions observed; nil
// when Observe did not ask.
func (e *executor) lineage(src, sink any) *Lineage {
	if !e.opts.Observe {
		return nil
	}
	l := &Lineage{}
	if o, ok := src.(SourceObserver); ok {
		l.Source, _ = o.ObservedSource()
	}
	if o, ok := sink.(SinkObserver); ok {
		l.Sink, _ = o.ObservedSink()
	}
	return l
}

// commitCancelled ends a cancelled attempt: the sink commits exactly the
// batches it acknowledged, within FlushTimeout, unless it overwrites its
// target, which then stays as it was.
func (e *executor) commitCancelled(ctx context.Context, inv *Invocation, sink SinkSession, forget func()) (int64, bool, error) {
	if inv.SinkWriteMode == WriteModeOverwrite {
		forget()
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.FlushTimeout)
		defer cancel()
		return 0, false, e.targetKept(ctx, inv, sink.Abort(actx))
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.FlushTimeout)
	defer cancel()
	n, err := sink.Commit(fctx)
	if err != nil {
		forget()
		return 0, false, fmt.Errorf("cancelled (%w); committing the acknowledged batches failed: %w", context.Cause(ctx), err)
	}
	return n, true, fmt.Errorf("cancelled after %d records were committed: %w", n, context.Cause(ctx))
}

// targetKept is the error of a cancelled overwrite the sink was told to
// discard; abortErr is how discarding went.
func (e *executor) targetKept(ctx context.Context, inv *Invocation, abortErr error) error {
	if abortErr != nil {
		e.opts.Logger.Warn("discard the cancelled overwrite", "row_id", inv.RowID, "sink", inv.Sink.Type, "error", e.redact.String(abortErr.Error()))
		return fmt.Errorf("cancelled (%w); %w, though discarding the partial copy failed: %w", context.Cause(ctx), ErrTargetKept, abortErr)
	}
	return fmt.Errorf("cancelled (%w) before the overwrite completed: %w", context.Cause(ctx), ErrTargetKept)
}

func (e *executor) abort(ctx context.Context, sink SinkSession, forget func()) {
	forget()
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.FlushTimeout)
	defer cancel()
	if err := sink.Abort(actx); err != nil {
		e.opts.Logger.Warn("abort sink", "error", e.redact.String(err.Error()))
	}
}

// cancelled attributes err to the cancellation when ctx was cancelled, so the
// result says "cancelled" rather than the connector's view of it.
func (e *executor) cancelled(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("cancelled (%w): %w", context.Cause(ctx), err)
	}
	return err
}

// acks counts the records one attempt's sink acknowledged and feeds them
// into the plan's progress.
type acks struct {
	e     *executor
	rowID string
	mu    sync.Mutex
	n     int64
}

func (e *executor) newAcks(rowID string) *acks { return &acks{e: e, rowID: rowID} }

// add is the sink's acknowledgement callback; it may be called from any
// goroutine.
func (a *acks) add(n int) {
	a.mu.Lock()
	a.n += int64(n)
	row := a.n
	a.mu.Unlock()
	a.e.progress(a.rowID, row, int64(n))
}

// forget takes what this attempt acknowledged back out of the plan's total,
// for when the sink does not keep it.
func (a *acks) forget() {
	a.mu.Lock()
	n := a.n
	a.n = 0
	a.mu.Unlock()
	a.e.progressMu.Lock()
	a.e.total -= n
	a.e.progressMu.Unlock()
}

func (e *executor) progress(rowID string, rowRecords, n int64) {
	e.progressMu.Lock()
	defer e.progressMu.Unlock()
	e.total += n
	if e.opts.Progress != nil {
		e.opts.Progress(Progress{RowID: rowID, RowRecords: rowRecords, Records: e.total, Elapsed: time.Since(e.start)})
	}
}
