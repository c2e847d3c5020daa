package logs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/server/redact"
)

// memAppender keeps appended lines in memory; it can be told to fail.
type memAppender struct {
	mu    sync.Mutex
	lines map[string][]db.RunLogLine
	fail  bool
}

func (m *memAppender) RunLogAppend(_ context.Context, runID string, lines []db.RunLogLine, _ int) error {
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

func TestLoggerFormatsAndRedacts(t *testing.T) {
	t.Parallel()
	h := NewHub(Options{RingSize: 10})
	defer h.Close(context.Background())
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
	h := NewHub(Options{RingSize: 4})
	defer h.Close(context.Background())
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
	h := NewHub(Options{Store: store, MaxLinesPerRun: 1000, FlushInterval: time.Hour, FlushLines: 1000})
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
	h.Close(context.Background())
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
	h := NewHub(Options{Store: store, MaxLinesPerRun: 100000, RingSize: 64, FlushInterval: time.Millisecond, FlushLines: 7})
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
	h.Close(context.Background())
	if got := len(store.get("r")); got != writers*each {
		t.Fatalf("persisted %d lines, want %d", got, writers*each)
	}
}
