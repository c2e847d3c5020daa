// Package logs captures each run's log lines: a bounded in-memory ring per
// run that live readers (SSE) tail, and batched persistence through the
// run-history store so the lines outlive the process.
package logs

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/server/redact"
)

// Appender persists batches of a run's lines; db.Store satisfies it.
type Appender interface {
	RunLogAppend(ctx context.Context, runID string, lines []db.RunLogLine, maxLinesPerRun int) error
}

// Options configure a Hub. Zero values take the defaults below.
type Options struct {
	// RingSize is how many of its newest lines a run keeps in memory for
	// live readers.
	RingSize int
	// MaxLinesPerRun caps the persisted lines of one run (the store keeps the
	// newest). Zero or less disables persistence.
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
	// Store persists the lines; nil keeps them in memory only.
	Store Appender
	// Log receives the lines too (tagged run_id), and persistence failures.
	Log *slog.Logger
}

// Defaults for Options.
const (
	DefaultRingSize      = 2000
	DefaultFlushInterval = 250 * time.Millisecond
	DefaultFlushLines    = 500
	DefaultDrainWindow   = 2 * time.Minute
)

// Hub owns the log capture of every run of this process.
type Hub struct {
	opts Options

	mu   sync.Mutex
	runs map[string]*Run
	// dirty holds the captures with lines not persisted yet, so the flusher
	// never walks the (many) finished captures kept for late readers.
	dirty map[*Run]struct{}

	kick   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	closed sync.Once
}

// NewHub starts a Hub and its background flusher; Close stops it.
func NewHub(opts Options) *Hub {
	if opts.RingSize <= 0 {
		opts.RingSize = DefaultRingSize
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = DefaultFlushInterval
	}
	if opts.FlushLines <= 0 {
		opts.FlushLines = DefaultFlushLines
	}
	if opts.DrainWindow <= 0 {
		opts.DrainWindow = DefaultDrainWindow
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	h := &Hub{
		opts:  opts,
		runs:  map[string]*Run{},
		dirty: map[*Run]struct{}{},
		kick:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	go h.flushLoop()
	return h
}

// Open returns the capture of runID, creating it. secrets are masked in every
// line the run logs.
func (h *Hub) Open(runID string, r *redact.Redactor) *Run {
	return h.OpenPart(runID, runID, 0, r)
}

// OpenPart returns the capture of one part of runID's execution, creating it:
// the lines of a cluster run's later attempt or of one of its shards, which
// other instances may log for the same run at the same time. Its lines are
// persisted under runID with seqs above base, so the parts never collide; key
// names the capture and is what Lookup finds (the run id for the part live
// readers follow). A finished capture still held under key for late readers
// is replaced.
func (h *Hub) OpenPart(key, runID string, base int64, r *redact.Redactor) *Run {
	h.mu.Lock()
	defer h.mu.Unlock()
	if run, ok := h.runs[key]; ok && !run.finished() {
		return run
	}
	run := &Run{
		hub:     h,
		key:     key,
		id:      runID,
		redact:  r,
		ring:    make([]db.RunLogLine, 0, min(h.opts.RingSize, 8)),
		base:    base,
		nextSeq: base,
		changed: make(chan struct{}),
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

// Close flushes every pending line and stops the flusher.
func (h *Hub) Close(ctx context.Context) {
	h.closed.Do(func() {
		close(h.stop)
		<-h.done
		h.flush(ctx, true)
	})
}

func (h *Hub) flushLoop() {
	defer close(h.done)
	t := time.NewTicker(h.opts.FlushInterval / 2)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		case <-h.kick:
		}
		h.flush(context.Background(), false)
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
	now := time.Now()
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

func (h *Hub) forget(key string, run *Run) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.runs[key] == run {
		delete(h.runs, key)
	}
}
