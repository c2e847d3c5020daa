// Package runlog captures each run's log lines: a bounded in-memory ring per
// run that live readers (SSE) tail, batched persistence through the
// run-history store so the lines outlive the process, and the layout of a
// run's seqs over the parts of its execution (layout.go).
package runlog

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/redact"
)

// Appender persists batches of a run's lines; db.Store satisfies it.
type Appender interface {
	RunLogAppend(ctx context.Context, runID string, lines []db.RunLogLine, limit db.LogCap) error
}

// Config configures a Hub. Zero values take the defaults below.
type Config struct {
	// RingSize is how many of its newest lines a run keeps in memory for
	// live readers.
	RingSize int
	// MaxLinesPerRun caps the persisted lines of each part of a run (the
	// store keeps the newest). Zero or less disables persistence.
	MaxLinesPerRun int
	// FlushInterval is how long a line may wait before it is persisted
	// (give or take half of it); a run that finishes sooner is persisted
	// whole when it finishes.
	FlushInterval time.Duration
	// FlushLines triggers an early flush of a run with this many pending lines.
	FlushLines int
	// DrainWindow is how long a finished run's ring stays in memory for late
	// readers before it is dropped (its persisted lines remain).
	DrainWindow time.Duration
	// MaxDraining bounds the finished runs whose rings are held for late
	// readers: past it the oldest is dropped before its window ends, so a
	// server finishing a thousand runs a second does not hold two minutes
	// of them.
	MaxDraining int
	// Store persists the lines; nil keeps them in memory only.
	Store Appender
	// Logger receives the lines too (tagged run_id), and persistence
	// failures.
	Logger *slog.Logger
	// Clock stamps the lines; nil means time.Now.
	Clock func() time.Time
}

// Defaults for Config.
const (
	DefaultRingSize      = 2000
	DefaultFlushInterval = 250 * time.Millisecond
	DefaultFlushLines    = 500
	DefaultDrainWindow   = 2 * time.Minute
	DefaultMaxDraining   = 10000
)

// withDefaults fills the zero fields of c.
func (c Config) withDefaults() Config {
	if c.RingSize <= 0 {
		c.RingSize = DefaultRingSize
	}
	if c.FlushInterval <= 0 {
		c.FlushInterval = DefaultFlushInterval
	}
	if c.FlushLines <= 0 {
		c.FlushLines = DefaultFlushLines
	}
	if c.DrainWindow <= 0 {
		c.DrainWindow = DefaultDrainWindow
	}
	if c.MaxDraining <= 0 {
		c.MaxDraining = DefaultMaxDraining
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	return c
}

// persists reports whether lines are written to the store.
func (c Config) persists() bool { return c.Store != nil && c.MaxLinesPerRun > 0 }

// Hub owns the log capture of every run of this process.
type Hub struct {
	cfg Config

	mu   sync.Mutex
	runs map[string]*Run
	// dirty holds the captures with lines not persisted yet, so the flusher
	// never walks the (many) finished captures kept for late readers.
	dirty map[*Run]struct{}
	// draining holds the finished captures, oldest first, each with when
	// its drain window ends; the flusher drops them (sweep). One queue
	// rather than a timer each: at a thousand runs a second, two minutes of
	// timers were a hundred thousand, and the Go runtime walks its timers
	// whenever one of them changes, which cost the server a sixteenth of
	// its CPU.
	draining []drained
	stopped  bool

	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	started bool
}

// New returns a Hub; Start starts its flusher and Stop persists what is
// pending and stops it.
func New(cfg Config) *Hub {
	return &Hub{
		cfg:   cfg.withDefaults(),
		runs:  map[string]*Run{},
		dirty: map[*Run]struct{}{},
		kick:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
}

// Start starts the background flusher. ctx is not kept: Stop ends it.
func (h *Hub) Start(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started {
		return errors.New("runlog: hub started twice")
	}
	h.started = true
	go h.flushLoop()
	return nil
}

// Open returns the capture of a run executed whole, creating it. r masks
// secrets in every line the run logs.
func (h *Hub) Open(runID string, r *redact.Redactor) *Run {
	return h.OpenPart(runID, runID, WholeRun(0), r)
}

// OpenPart returns the capture of one part of runID's execution, creating it:
// the lines of a cluster run's later attempt or of one of its shards, which
// other instances may log for the same run at the same time. Its lines are
// persisted under runID in the part's seq block, so the parts never collide;
// key names the capture and is what Lookup finds (the run id for the part live
// readers follow). A finished capture still held under key for late readers
// is replaced.
func (h *Hub) OpenPart(key, runID string, part Part, r *redact.Redactor) *Run {
	h.mu.Lock()
	defer h.mu.Unlock()
	if run, ok := h.runs[key]; ok && !run.finished() {
		return run
	}
	base := part.base()
	run := &Run{
		hub:     h,
		key:     key,
		id:      runID,
		part:    part,
		redact:  r,
		ring:    make([]db.RunLogLine, 0, min(h.cfg.RingSize, 8)),
		nextSeq: base,
	}
	h.runs[key] = run
	return run
}

// Lookup returns the in-memory capture of runID, if it is still held.
func (h *Hub) Lookup(runID string) (*Run, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	run, ok := h.runs[runID]
	return run, ok
}

// Stop stops the flusher and persists every pending line, within ctx.
// Captures keep serving live readers; lines they log after Stop are not
// persisted.
func (h *Hub) Stop(ctx context.Context) {
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return
	}
	h.stopped = true
	started := h.started
	h.draining = nil
	h.mu.Unlock()
	if started {
		close(h.stop)
		<-h.done
	}
	h.flush(ctx, true)
}

func (h *Hub) flushLoop() {
	defer close(h.done)
	t := time.NewTicker(h.cfg.FlushInterval / 2)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		case <-h.kick:
		}
		h.flush(context.Background(), false)
		h.sweep(context.Background(), h.cfg.Clock())
	}
}

// flush persists the runs whose lines are due, or every pending line when
// all is set.
func (h *Hub) flush(ctx context.Context, all bool) {
	h.mu.Lock()
	runs := make([]*Run, 0, len(h.dirty))
	for r := range h.dirty {
		runs = append(runs, r)
	}
	clear(h.dirty)
	h.mu.Unlock()
	now := h.cfg.Clock()
	for _, r := range runs {
		if all || r.due(now) {
			r.Flush(ctx)
		}
		if r.hasPending() {
			h.markDirty(r)
		}
	}
}

// markDirty notes that r has lines to persist.
func (h *Hub) markDirty(r *Run) {
	h.mu.Lock()
	h.dirty[r] = struct{}{}
	h.mu.Unlock()
}

func (h *Hub) wake() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// drained is a finished capture held for late readers until its drain
// window ends.
type drained struct {
	run *Run
	end time.Time
}

// drain holds run's finished capture for late readers until the flusher's
// sweep drops it: once its drain window has ended, or sooner when more
// than MaxDraining are held.
func (h *Hub) drain(run *Run) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return
	}
	h.draining = append(h.draining, drained{run: run, end: h.cfg.Clock().Add(h.cfg.DrainWindow)})
}

// sweep drops the finished captures whose drain window has ended, and the
// oldest past MaxDraining, persisting what they still hold first. A
// capture replaced since under its key (OpenPart) leaves the new one be.
func (h *Hub) sweep(ctx context.Context, now time.Time) {
	h.mu.Lock()
	n := 0
	for n < len(h.draining) && (len(h.draining)-n > h.cfg.MaxDraining || !now.Before(h.draining[n].end)) {
		n++
	}
	if n == 0 {
		h.mu.Unlock()
		return
	}
	done := slices.Clone(h.draining[:n])
	h.draining = slices.Delete(h.draining, 0, n)
	h.mu.Unlock()
	for _, d := range done {
		d.run.Flush(ctx)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range done {
		if h.runs[d.run.key] == d.run {
			delete(h.runs, d.run.key)
		}
	}
}
