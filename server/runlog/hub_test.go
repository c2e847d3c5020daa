package runlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/redact"
	"github.com/faucet-dev/faucet/internal/testwait"
)

// memAppender keeps appended lines in memory; it can be told to fail.
type memAppender struct {
	mu    sync.Mutex
	lines map[string][]db.RunLogLine
	fail  bool
}

func (m *memAppender) RunLogAppend(_ context.Context, runID string, lines []db.RunLogLine, _ db.LogCap) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail {
		return errors.New("store down")
	}
	if m.lines == nil {
		m.lines = map[string][]db.RunLogLine{}
	}
	m.lines[runID] = append(m.lines[runID], lines...)
	return nil
}

func (m *memAppender) get(runID string) []db.RunLogLine {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]db.RunLogLine(nil), m.lines[runID]...)
}

// startHub starts a hub, stopped when t ends.
func startHub(t *testing.T, cfg Config) *Hub {
	t.Helper()
	h := New(cfg)
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Stop(context.Background()) })
	return h
}

func TestLoggerFormatsAndRedacts(t *testing.T) {
	t.Parallel()
	h := startHub(t, Config{RingSize: 10})
	defer h.Stop(context.Background())
	run := h.Open("r1", redact.New([]string{"s3cret"}))
	log := run.Logger().With("connector", "csv").WithGroup("batch")
	log.Warn("wrote batch with s3cret inside", "rows", 3, slog.Group("sink", "path", "/tmp/a b"))
	lines, truncated, done := run.Since(0, 10)
	if truncated || done || len(lines) != 1 {
		t.Fatalf("Since = %v %v %v", lines, truncated, done)
	}
	want := `wrote batch with [REDACTED] inside connector=csv batch.rows=3 batch.sink.path="/tmp/a b"`
	if lines[0].Line != want || lines[0].Level != "warn" || lines[0].Seq != 1 {
		t.Fatalf("line = %+v, want %q at warn, seq 1", lines[0], want)
	}
}

func TestRingTruncatesAndFinishSignalsDone(t *testing.T) {
	t.Parallel()
	h := startHub(t, Config{RingSize: 4})
	defer h.Stop(context.Background())
	run := h.Open("r", nil)
	for i := 1; i <= 10; i++ {
		run.Append(slog.LevelInfo, fmt.Sprint("line ", i))
	}
	lines, truncated, done := run.Since(0, 100)
	if !truncated || done || len(lines) != 4 || lines[0].Seq != 7 || lines[3].Seq != 10 {
		t.Fatalf("Since(0) = %+v truncated=%v done=%v", lines, truncated, done)
	}
	if _, truncated, _ = run.Since(8, 100); truncated {
		t.Fatal("a reader at seq 8 has missed nothing")
	}
	changed := run.Changed()
	run.Finish()
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("Finish did not signal readers")
	}
	if lines, _, done = run.Since(9, 100); !done || len(lines) != 1 {
		t.Fatalf("after Finish: %+v done=%v", lines, done)
	}
	if _, _, done = run.Since(10, 100); !done {
		t.Fatal("a reader that read everything must see done")
	}
}

func TestPersistenceBatchesAndRetries(t *testing.T) {
	t.Parallel()
	store := &memAppender{fail: true}
	h := startHub(t, Config{Store: store, MaxLinesPerRun: 1000, FlushInterval: time.Hour, FlushLines: 1000})
	run := h.Open("r", nil)
	for i := range 5 {
		run.Append(slog.LevelInfo, fmt.Sprint(i))
	}
	run.Flush(context.Background())
	if got := store.get("r"); len(got) != 0 {
		t.Fatalf("failed flush stored %d lines", len(got))
	}
	store.mu.Lock()
	store.fail = false
	store.mu.Unlock()
	run.Append(slog.LevelInfo, "5")
	h.Stop(context.Background())
	got := store.get("r")
	if len(got) != 6 {
		t.Fatalf("stored %d lines, want 6 (retried batch + new line)", len(got))
	}
	for i, l := range got {
		if l.Seq != int64(i+1) {
			t.Fatalf("line %d has seq %d: persisted out of order", i, l.Seq)
		}
	}
}

func TestConcurrentWritersAndReaders(t *testing.T) {
	t.Parallel()
	store := &memAppender{}
	h := startHub(t, Config{Store: store, MaxLinesPerRun: 100000, RingSize: 64, FlushInterval: time.Millisecond, FlushLines: 7})
	run := h.Open("r", nil)
	const writers, each = 8, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			log := run.Logger().With("writer", w)
			for i := range each {
				log.Info("line", "i", i)
			}
		}()
	}
	readerDone := make(chan int64)
	go func() {
		var after int64
		for {
			ch := run.Changed()
			lines, _, done := run.Since(after, 50)
			for _, l := range lines {
				if l.Seq <= after {
					panic("sequence went backwards")
				}
				after = l.Seq
			}
			if done {
				readerDone <- after
				return
			}
			if len(lines) == 0 {
				<-ch
			}
		}
	}()
	wg.Wait()
	run.Finish()
	if last := <-readerDone; last != writers*each {
		t.Fatalf("reader ended at seq %d, want %d", last, writers*each)
	}
	h.Stop(context.Background())
	if got := len(store.get("r")); got != writers*each {
		t.Fatalf("persisted %d lines, want %d", got, writers*each)
	}
}

func TestPartsOfARunNumberTheirLinesApart(t *testing.T) {
	t.Parallel()
	store := &memAppender{}
	h := startHub(t, Config{Store: store, MaxLinesPerRun: 100})
	defer h.Stop(context.Background())
	whole := h.Open("r", nil)
	shard := h.OpenPart("r/00001", "r", Part{Shard: 1}, nil)
	if whole == shard {
		t.Fatal("a shard's capture is the run's")
	}
	whole.Append(slog.LevelInfo, "claimed")
	if seq := shard.Append(slog.LevelInfo, "shard claimed"); seq != 2<<40+1 {
		t.Fatalf("shard line seq %d, want %d", seq, 2<<40+1)
	}
	if got, ok := h.Lookup("r"); !ok || got != whole {
		t.Fatal("Lookup does not find the run's own capture")
	}
	whole.Flush(context.Background())
	shard.Flush(context.Background())
	if lines := store.get("r"); len(lines) != 2 || lines[0].Seq != 1 || lines[1].Seq != 2<<40+1 {
		t.Fatalf("persisted %+v", lines)
	}
	// A later attempt on this instance gets a fresh capture, not the
	// finished one kept for late readers.
	whole.Finish()
	again := h.OpenPart("r", "r", WholeRun(1), nil)
	if again == whole {
		t.Fatal("a finished capture was reused")
	}
	if seq := again.Append(slog.LevelInfo, "claimed again"); seq != 1<<32+1 {
		t.Fatalf("second attempt's first seq %d", seq)
	}
}

func TestFlushWithHandsOverThePendingLines(t *testing.T) {
	t.Parallel()
	store := &memAppender{}
	h := startHub(t, Config{Store: store, MaxLinesPerRun: 3, FlushInterval: time.Hour})
	defer h.Stop(context.Background())
	run := h.Open("r", nil)
	run.Append(slog.LevelInfo, "one")
	run.Append(slog.LevelInfo, "two")
	var got []db.RunLogLine
	var limit db.LogCap
	err := run.FlushWith(func(lines []db.RunLogLine, c db.LogCap) error {
		got, limit = lines, c
		return errors.New("terminal write failed")
	})
	if err == nil || len(got) != 2 || limit != (db.LogCap{}) {
		t.Fatalf("FlushWith handed %d lines, cap %+v, err %v; want 2 lines and no cap (2 < 3 lines in the run's only capture)", len(got), limit, err)
	}
	// The lines of a failed write stay pending; the cap applies once the
	// run has as many lines as the cap.
	run.Append(slog.LevelInfo, "three")
	if err := run.FlushWith(func(lines []db.RunLogLine, c db.LogCap) error {
		got, limit = lines, c
		return nil
	}); err != nil || len(got) != 3 || got[0].Line != "one" || limit != (db.LogCap{Keep: 3, From: 0, To: 1 << 32}) {
		t.Fatalf("second FlushWith: %d lines (%+v), cap %+v, %v", len(got), got, limit, err)
	}
	if err := run.FlushWith(func(lines []db.RunLogLine, _ db.LogCap) error {
		got = lines
		return nil
	}); err != nil || len(got) != 0 {
		t.Fatalf("a third FlushWith handed %d lines again", len(got))
	}
}

// TestFinishedCapturesDrainAfterTheirWindowOrPastTheBound finishes more
// runs than the hub holds for late readers, with the clock stopped: the
// flusher's next sweep drops the oldest, their pending lines persisted
// first, and the rest once the clock passes their window; a capture that
// replaced a finished one under its key stays.
func TestFinishedCapturesDrainAfterTheirWindowOrPastTheBound(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	store := &memAppender{}
	h := startHub(t, Config{
		Store: store, MaxLinesPerRun: 100, FlushInterval: 10 * time.Millisecond, FlushLines: 100,
		DrainWindow: time.Minute, MaxDraining: 3, Clock: clock,
	})
	for i := 1; i <= 5; i++ {
		run := h.Open(fmt.Sprint("r", i), nil)
		run.Append(slog.LevelInfo, "last words")
		run.Finish()
	}
	held := func(id string) bool {
		_, ok := h.Lookup(id)
		return ok
	}
	testwait.Until(t, 10*time.Second, func() error {
		if held("r1") || held("r2") {
			return errors.New("the two oldest of five finished runs are still held past a bound of three")
		}
		return nil
	})
	for _, id := range []string{"r1", "r2"} {
		if got := store.get(id); len(got) != 1 || got[0].Line != "last words" {
			t.Fatalf("%s was dropped with its lines %+v persisted, want its one line", id, got)
		}
	}
	for _, id := range []string{"r3", "r4", "r5"} {
		if !held(id) {
			t.Fatalf("%s was dropped before its window ended, with the bound not passed", id)
		}
	}
	again := h.Open("r3", nil)
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	testwait.Until(t, 10*time.Second, func() error {
		if held("r4") || held("r5") {
			return errors.New("runs are still held after their drain window ended")
		}
		return nil
	})
	if run, ok := h.Lookup("r3"); !ok || run != again {
		t.Fatal("dropping the finished r3 dropped the capture that replaced it")
	}
}
