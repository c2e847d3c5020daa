package dbtest

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

// logLines builds lines seq from..to (inclusive) captured at ts.
func logLines(from, to int64, ts time.Time) []db.RunLogLine {
	var out []db.RunLogLine
	for seq := from; seq <= to; seq++ {
		out = append(out, db.RunLogLine{Seq: seq, TS: ts, Level: "INFO", Line: fmt.Sprintf("line %d: wrote batch", seq)})
	}
	return out
}

func appendLogs(t testing.TB, s db.Store, runID string, maxLines int, lines []db.RunLogLine) {
	t.Helper()
	appendCapped(t, s, runID, keep(maxLines), lines)
}

// appendCapped appends lines under an explicit cap.
func appendCapped(t testing.TB, s db.Store, runID string, limit db.LogCap, lines []db.RunLogLine) {
	t.Helper()
	if err := s.RunLogAppend(t.Context(), runID, lines, limit); err != nil {
		t.Fatalf("append logs of %s: %v", runID, err)
	}
}

// keep caps a run's whole log at its newest n lines; 0 keeps every line.
func keep(n int) db.LogCap { return db.LogCap{Keep: n, To: math.MaxInt64} }

func logPage(t testing.TB, s db.Store, runID string, after int64, limit int) db.RunLogPage {
	t.Helper()
	p, err := s.RunLogList(t.Context(), runID, after, limit)
	if err != nil {
		t.Fatalf("list logs of %s: %v", runID, err)
	}
	return p
}

func seqs(p db.RunLogPage) []string {
	out := make([]string, len(p.Lines))
	for i, l := range p.Lines {
		out[i] = fmt.Sprint(l.Seq)
	}
	return out
}

func seqRange(from, to int64) []string {
	var out []string
	for s := from; s <= to; s++ {
		out = append(out, fmt.Sprint(s))
	}
	return out
}

func exerciseRunLogs(t *testing.T, newURL func(t testing.TB) string) {
	t.Run("AppendAndPaginate", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		ts := time.Now().In(time.FixedZone("UTC-5", -5*3600))
		lines := logLines(1, 10, ts)
		lines[2].Level = "WARN"
		appendLogs(t, s, "r1", 0, lines)
		appendLogs(t, s, "r2", 0, logLines(1, 2, ts))

		p := logPage(t, s, "r1", 0, 4)
		equalIDs(t, "first page", seqRange(1, 4), seqs(p))
		if p.Truncated {
			t.Fatal("untruncated logs reported truncated")
		}
		want := lines[2]
		want.TS = ts.UTC().Truncate(time.Microsecond)
		sameJSON(t, "log line", want, p.Lines[2])
		if p.Lines[2].TS.Location() != time.UTC {
			t.Errorf("log timestamp in %v, want UTC", p.Lines[2].TS.Location())
		}
		equalIDs(t, "second page", seqRange(5, 10), seqs(logPage(t, s, "r1", 4, 100)))
		equalIDs(t, "past the end", nil, seqs(logPage(t, s, "r1", 10, 100)))
		equalIDs(t, "unknown run", nil, seqs(logPage(t, s, "nope", 0, 100)))

		// A retried batch does not duplicate lines.
		appendLogs(t, s, "r1", 0, logLines(5, 12, ts))
		equalIDs(t, "after an overlapping append", seqRange(1, 12), seqs(logPage(t, s, "r1", 0, 0)))
		equalIDs(t, "other run", seqRange(1, 2), seqs(logPage(t, s, "r2", 0, 100)))
	})

	t.Run("CapTruncatesOldest", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		appendLogs(t, s, "r1", 5, logLines(1, 4, now()))
		if p := logPage(t, s, "r1", 0, 100); p.Truncated || len(p.Lines) != 4 {
			t.Fatalf("under the cap: %d lines, truncated %v", len(p.Lines), p.Truncated)
		}
		appendLogs(t, s, "r1", 5, logLines(5, 12, now()))
		p := logPage(t, s, "r1", 0, 100)
		equalIDs(t, "capped lines", seqRange(8, 12), seqs(p))
		if !p.Truncated {
			t.Fatal("capped logs not reported truncated")
		}
		// A single batch larger than the cap keeps its newest lines.
		appendLogs(t, s, "r2", 3, logLines(1, 10, now()))
		p = logPage(t, s, "r2", 0, 100)
		equalIDs(t, "oversized batch", seqRange(8, 10), seqs(p))
		if !p.Truncated {
			t.Fatal("oversized batch not reported truncated")
		}
		appendLogs(t, s, "r3", 0, logLines(1, 10, now()))
		if p := logPage(t, s, "r3", 0, 100); p.Truncated || len(p.Lines) != 10 {
			t.Fatalf("uncapped: %d lines, truncated %v", len(p.Lines), p.Truncated)
		}
		// The cap counts sequence numbers: after a gap, the lines of the
		// newest five seqs remain.
		appendLogs(t, s, "r4", 5, logLines(1, 3, now()))
		appendLogs(t, s, "r4", 5, logLines(10, 12, now()))
		p = logPage(t, s, "r4", 0, 100)
		equalIDs(t, "capped after a gap", seqRange(10, 12), seqs(p))
		if !p.Truncated {
			t.Fatal("capped logs after a gap not reported truncated")
		}
		// The cap applies to its seq range: a second part of the run, logged
		// in a range of its own, keeps its own newest lines and leaves the
		// first part's alone.
		const block = 1000
		appendCapped(t, s, "r5", db.LogCap{Keep: 3, From: 0, To: block}, logLines(1, 3, now()))
		appendCapped(t, s, "r5", db.LogCap{Keep: 3, From: block, To: 2 * block}, logLines(block+1, block+5, now()))
		p = logPage(t, s, "r5", 0, 100)
		equalIDs(t, "capped per block", append(seqRange(1, 3), seqRange(block+3, block+5)...), seqs(p))
		if !p.Truncated {
			t.Fatal("a capped block not reported truncated")
		}
	})

	t.Run("DefaultLimit", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		appendLogs(t, s, "r1", 0, logLines(1, int64(db.DefaultRunLogLimit+5), now()))
		if got := logPage(t, s, "r1", 0, 0); len(got.Lines) != db.DefaultRunLogLimit {
			t.Fatalf("zero limit returned %d lines, want %d", len(got.Lines), db.DefaultRunLogLimit)
		}
	})

	t.Run("PurgeByAge", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		old := now().Add(-2 * time.Hour)
		appendLogs(t, s, "mixed", 0, append(logLines(1, 3, old), logLines(4, 5, now())...))
		appendLogs(t, s, "old-truncated", 2, logLines(1, 4, old))
		appendLogs(t, s, "new-truncated", 2, logLines(1, 4, now()))
		n, err := s.RunLogPurge(t.Context(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if n != 3+2 {
			t.Fatalf("purged %d lines, want 5", n)
		}
		equalIDs(t, "mixed run after purge", seqRange(4, 5), seqs(logPage(t, s, "mixed", 0, 100)))
		if p := logPage(t, s, "old-truncated", 0, 100); len(p.Lines) != 0 || p.Truncated {
			t.Fatalf("fully purged run: %d lines, truncated %v; want none, not truncated", len(p.Lines), p.Truncated)
		}
		if p := logPage(t, s, "new-truncated", 0, 100); len(p.Lines) != 2 || !p.Truncated {
			t.Fatalf("recent truncated run: %d lines, truncated %v; want 2, truncated", len(p.Lines), p.Truncated)
		}
	})
}
