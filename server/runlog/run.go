package runlog

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/redact"
)

// Run is the log capture of one run: a ring of its newest lines, the lines
// not yet persisted, and a change signal live readers wait on.
type Run struct {
	hub *Hub
	// key names the capture in the hub; id is the run its lines belong to.
	key    string
	id     string
	redact *redact.Redactor
	// part is the part of the run's execution the capture logs.
	part Part

	mu      sync.Mutex
	ring    []db.RunLogLine
	head    int // index of the oldest line once the ring is full
	nextSeq int64
	pending []db.RunLogLine
	// pendingSince is when the oldest pending line was appended.
	pendingSince time.Time
	done         bool
	// changed is closed at the next line or the end; made only when a
	// reader waits, so a run nobody follows allocates none per line.
	changed chan struct{}

	flushMu sync.Mutex
}

// ID returns the run id.
func (r *Run) ID() string { return r.id }

// Logger returns a logger whose records become this run's lines. Records are
// formatted as "message key=value …", secrets masked.
func (r *Run) Logger() *slog.Logger {
	return slog.New(&handler{run: r})
}

// Append records one line (already formatted) and returns its sequence number.
func (r *Run) Append(level slog.Level, msg string) int64 {
	// The history keeps microseconds: a line read live must carry the very
	// timestamp it is read back with once persisted.
	line := db.RunLogLine{TS: r.hub.cfg.Clock().UTC().Truncate(time.Microsecond), Level: levelName(level), Line: r.redact.String(msg)}
	r.mu.Lock()
	r.nextSeq++
	line.Seq = r.nextSeq
	size := r.hub.cfg.RingSize
	if len(r.ring) < size {
		r.ring = append(r.ring, line)
	} else {
		r.ring[r.head] = line
		r.head = (r.head + 1) % size
	}
	persist := r.hub.cfg.persists()
	var kick, first bool
	if persist {
		if first = len(r.pending) == 0; first {
			r.pendingSince = line.TS
		}
		r.pending = append(r.pending, line)
		kick = len(r.pending) >= r.hub.cfg.FlushLines
	}
	r.signal()
	r.mu.Unlock()
	if first {
		r.hub.markDirty(r)
	}
	if kick {
		r.hub.wake()
	}
	r.hub.cfg.Logger.Log(context.Background(), level, line.Line, "run_id", r.id)
	return line.Seq
}

// Since returns up to limit ring lines with seq > after, oldest first.
// truncated reports that lines after `after` were already evicted from the
// ring, so the reader missed some. done reports that the run has finished and
// no line will follow the returned ones.
func (r *Run) Since(after int64, limit int) (lines []db.RunLogLine, truncated, done bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.ring)
	if n > 0 {
		oldest := r.ring[r.head].Seq
		truncated = after+1 < oldest
		for i := 0; i < n && len(lines) < limit; i++ {
			l := r.ring[(r.head+i)%n]
			if l.Seq > after {
				lines = append(lines, l)
			}
		}
	}
	done = r.done && (len(lines) == 0 || lines[len(lines)-1].Seq == r.nextSeq)
	return lines, truncated, done
}

// Changed returns a channel closed at the next line or when the run finishes.
func (r *Run) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	return r.changed
}

// signal wakes the readers waiting on changed; r.mu is held.
func (r *Run) signal() {
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

// due reports whether the oldest pending line has waited a flush interval.
// Short runs are persisted whole when they finish, in one write.
func (r *Run) due(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	cfg := r.hub.cfg
	return len(r.pending) >= cfg.FlushLines || (len(r.pending) > 0 && now.Sub(r.pendingSince) >= cfg.FlushInterval)
}

func (r *Run) finished() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done
}

func (r *Run) hasPending() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending) > 0
}

// Flush persists the pending lines now. Lines that fail to persist are kept
// for the next flush, up to the per-run cap.
func (r *Run) Flush(ctx context.Context) {
	cfg := r.hub.cfg
	err := r.FlushWith(func(batch []db.RunLogLine, limit db.LogCap) error {
		if len(batch) == 0 {
			return nil
		}
		return cfg.Store.RunLogAppend(ctx, r.id, batch, limit)
	})
	if err != nil {
		cfg.Logger.Warn("persist run log lines", "run_id", r.id, "error", err)
	}
}

// FlushWith hands the pending lines, and the cap of the capture's part, to
// write, which persists them, typically together with the run's terminal
// record so that both land in one write. It waits for a flush in progress
// first, so when write runs no earlier line of this capture is still on its
// way. write gets no lines (and no cap) when the hub does not persist, and no
// cap when applying it cannot drop anything: this capture is the run's only
// part and has logged fewer lines than the cap. When write fails the lines
// stay pending for the next flush, up to the cap.
func (r *Run) FlushWith(write func(lines []db.RunLogLine, limit db.LogCap) error) error {
	cfg := r.hub.cfg
	if !cfg.persists() {
		return write(nil, db.LogCap{})
	}
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	r.mu.Lock()
	batch := r.pending
	r.pending = nil
	limit := r.part.limit(cfg.MaxLinesPerRun)
	if r.part == WholeRun(0) && r.nextSeq < int64(cfg.MaxLinesPerRun) {
		limit = db.LogCap{}
	}
	r.mu.Unlock()
	err := write(batch, limit)
	if err == nil || len(batch) == 0 {
		return err
	}
	r.mu.Lock()
	r.pending = append(batch, r.pending...)
	if over := len(r.pending) - cfg.MaxLinesPerRun; over > 0 {
		r.pending = r.pending[over:]
	}
	if len(r.pending) > 0 {
		r.pendingSince = r.pending[0].TS
	}
	r.mu.Unlock()
	r.hub.markDirty(r)
	return err
}

// Finish marks the run done: live readers receive their end event once they
// have read every line. The ring is dropped after the hub's drain window.
func (r *Run) Finish() {
	r.mu.Lock()
	if r.done {
		r.mu.Unlock()
		return
	}
	r.done = true
	r.signal()
	r.mu.Unlock()
	r.hub.drain(r)
}

func levelName(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "error"
	case l >= slog.LevelWarn:
		return "warn"
	case l >= slog.LevelInfo:
		return "info"
	}
	return "debug"
}

// handler turns slog records into run lines.
type handler struct {
	run    *Run
	prefix string // text of the attrs bound with WithAttrs
	group  string // dotted group prefix for later attrs
}

func (h *handler) Enabled(context.Context, slog.Level) bool { return true }

func (h *handler) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Message)
	b.WriteString(h.prefix)
	rec.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, h.group, a)
		return true
	})
	h.run.Append(rec.Level, b.String())
	return nil
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.prefix)
	for _, a := range attrs {
		appendAttr(&b, h.group, a)
	}
	return &handler{run: h.run, prefix: b.String(), group: h.group}
}

func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &handler{run: h.run, prefix: h.prefix, group: h.group + name + "."}
}

func appendAttr(b *strings.Builder, group string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		g := group
		if a.Key != "" {
			g += a.Key + "."
		}
		for _, ga := range a.Value.Group() {
			appendAttr(b, g, ga)
		}
		return
	}
	b.WriteByte(' ')
	b.WriteString(group)
	b.WriteString(a.Key)
	b.WriteByte('=')
	b.WriteString(quoteIfNeeded(a.Value.String()))
}

func quoteIfNeeded(s string) string {
	if s == "" {
		return `""`
	}
	for _, c := range s {
		if unicode.IsSpace(c) || c == '"' || c == '=' || !unicode.IsPrint(c) {
			return strconv.Quote(s)
		}
	}
	return s
}
