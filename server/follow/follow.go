// Package follow bounds and shares the work of following run logs: it caps
// the log followers per run and in total, and gives the followers of a run
// that this process does not execute one shared poller of the history,
// whose lines it fans out in memory, instead of one poller each.
package follow

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/server/metrics"
)

// Defaults of Options.
const (
	DefaultMaxPerRun = 100
	DefaultMaxTotal  = 1000
	DefaultPoll      = 500 * time.Millisecond
	// keepLines is how many of a remote run's newest lines a feed holds for
	// its followers; one that falls further behind reads the history.
	keepLines = 2000
	pageLines = 1000
)

// ErrTooMany: a follower over a cap; the error says which.
var ErrTooMany = errors.New("too many log followers")

// History is what a feed reads; db.Store satisfies it.
type History interface {
	RunLogList(ctx context.Context, runID string, after int64, limit int) (db.RunLogPage, error)
	RunGet(ctx context.Context, runID string) (*db.RunRecord, error)
}

// Options configure a Hub; zero values take the defaults.
type Options struct {
	MaxPerRun, MaxTotal int
	Poll                time.Duration
	// Metrics, when set, gets the follower and feed gauges.
	Metrics *metrics.Metrics
}

// Hub counts the followers and owns the shared feeds.
type Hub struct {
	history History
	opts    Options

	mu     sync.Mutex
	total  int
	perRun map[string]int
	feeds  map[string]*Feed
}

// New returns a Hub reading h.
func New(h History, opts Options) *Hub {
	if opts.MaxPerRun <= 0 {
		opts.MaxPerRun = DefaultMaxPerRun
	}
	if opts.MaxTotal <= 0 {
		opts.MaxTotal = DefaultMaxTotal
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	return &Hub{history: h, opts: opts, perRun: map[string]int{}, feeds: map[string]*Feed{}}
}

// Join counts one follower of runID, or refuses it with ErrTooMany when a
// cap is reached. The caller calls the returned release when it stops.
func (h *Hub) Join(runID string) (release func(), err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.total >= h.opts.MaxTotal:
		return nil, fmt.Errorf("%w: the server has %d, its limit", ErrTooMany, h.opts.MaxTotal)
	case h.perRun[runID] >= h.opts.MaxPerRun:
		return nil, fmt.Errorf("%w: run %s has %d, the limit per run", ErrTooMany, runID, h.opts.MaxPerRun)
	}
	h.total++
	h.perRun[runID]++
	h.gauges()
	return sync.OnceFunc(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.total--
		if h.perRun[runID]--; h.perRun[runID] <= 0 {
			delete(h.perRun, runID)
		}
		h.gauges()
	}), nil
}

// gauges publishes the counts; h.mu is held.
func (h *Hub) gauges() {
	if m := h.opts.Metrics; m != nil {
		m.LogFollowers.Set(float64(h.total))
		m.LogFeeds.Set(float64(len(h.feeds)))
	}
}

// Feed returns the shared feed of a remote run, starting its poller for
// the first follower; the caller calls the returned leave when it stops,
// and the poller stops with the last one.
func (h *Hub) Feed(runID string) (f *Feed, leave func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f = h.feeds[runID]
	if f == nil {
		ctx, cancel := context.WithCancel(context.Background())
		f = &Feed{hub: h, id: runID, stop: cancel, changed: make(chan struct{})}
		h.feeds[runID] = f
		h.gauges()
		go f.poll(ctx)
	}
	f.followers++
	return f, sync.OnceFunc(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if f.followers--; f.followers == 0 {
			delete(h.feeds, runID)
			f.stop()
			h.gauges()
		}
	})
}

// Feed is the persisted log of one remote run as its poller reads it.
type Feed struct {
	hub       *Hub
	id        string
	stop      context.CancelFunc
	followers int // guarded by hub.mu

	mu        sync.Mutex
	lines     []db.RunLogLine // the newest, oldest first
	from      int64           // lines holds every line after this seq
	last      int64           // seq of the newest line read
	truncated bool            // the per-run cap dropped the first lines
	done      bool
	err       error
	changed   chan struct{}
}

// poll reads the run's new lines until it is terminal and read to its end,
// or the last follower left.
func (f *Feed) poll(ctx context.Context) {
	t := time.NewTicker(f.hub.opts.Poll)
	defer t.Stop()
	first := true
	for {
		rec, err := f.hub.history.RunGet(ctx, f.id)
		terminal := err == nil && rec.Status.Terminal()
		for err == nil {
			var page db.RunLogPage
			f.mu.Lock()
			after := f.last
			f.mu.Unlock()
			page, err = f.hub.history.RunLogList(ctx, f.id, after, pageLines)
			if err != nil {
				break
			}
			f.add(page, first)
			first = false
			if len(page.Lines) < pageLines {
				break
			}
		}
		if err != nil || terminal {
			f.finish(err)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (f *Feed) add(page db.RunLogPage, first bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if first && page.Truncated {
		f.truncated = true
	}
	if len(page.Lines) == 0 {
		return
	}
	f.lines = append(f.lines, page.Lines...)
	if n := len(f.lines) - keepLines; n > 0 {
		f.from = f.lines[n-1].Seq
		f.lines = append(f.lines[:0:0], f.lines[n:]...)
	}
	f.last = page.Lines[len(page.Lines)-1].Seq
	f.signal()
}

func (f *Feed) finish(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.done, f.err = true, err
	f.signal()
}

func (f *Feed) signal() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// Since returns up to limit lines with seq > after, oldest first; held
// says whether the feed still held the line after after (false: the
// caller fell behind and must read the history itself); done, that the
// run's log is complete (err, when the poller gave up on a history error).
func (f *Feed) Since(after int64, limit int) (lines []db.RunLogLine, held, truncated, done bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if after < f.from {
		return nil, false, false, false, nil
	}
	truncated = f.truncated && after == 0
	for _, l := range f.lines {
		if l.Seq > after {
			lines = append(lines, l)
			if len(lines) == limit {
				break
			}
		}
	}
	complete := len(lines) == 0 || lines[len(lines)-1].Seq == f.last
	return lines, true, truncated, f.done && complete, f.err
}

// Changed returns a channel closed at the next lines or at the end.
func (f *Feed) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}
