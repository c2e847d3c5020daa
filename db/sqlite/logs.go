package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

// RunLogAppend stores a batch of log lines and applies the per-run cap, in
// one transaction.
func (s *Store) RunLogAppend(ctx context.Context, runID string, lines []db.RunLogLine, maxLinesPerRun int) error {
	const op = "run log append"
	if len(lines) == 0 {
		return nil
	}
	b, err := encodeLines(runID, lines)
	if err != nil {
		return wrap(ctx, op, err)
	}
	last := lines[len(lines)-1].Seq
	return s.write(ctx, op, func(ctx context.Context, q *dbsqlc.Queries) error {
		return appendLines(ctx, q, runID, b, last, maxLinesPerRun)
	})
}

// encodeLines is the JSON array of lines RunLogInsert takes.
func encodeLines(runID string, lines []db.RunLogLine) (string, error) {
	type line struct {
		Seq   int64  `json:"seq"`
		TS    int64  `json:"ts"`
		Level string `json:"level"`
		Line  string `json:"line"`
	}
	rows := make([]line, len(lines))
	for i, l := range lines {
		rows[i] = line{Seq: l.Seq, TS: micros(l.TS), Level: l.Level, Line: l.Line}
	}
	b, err := json.Marshal(rows)
	if err != nil {
		return "", fmt.Errorf("encode log lines of run %s: %w", runID, err)
	}
	return string(b), nil
}

// appendLines inserts encoded lines and applies the per-run cap to the log
// block of seq inside the caller's transaction.
func appendLines(ctx context.Context, q *dbsqlc.Queries, runID, lines string, seq int64, maxLinesPerRun int) error {
	if _, err := q.RunLogInsert(ctx, dbsqlc.RunLogInsertParams{RunID: runID, Lines: lines}); err != nil {
		return err
	}
	if maxLinesPerRun <= 0 {
		return nil
	}
	start, end := db.LogBlock(seq)
	dropped, err := q.RunLogTrim(ctx, dbsqlc.RunLogTrimParams{RunID: runID, BlockStart: start, BlockEnd: end, Keep: int64(maxLinesPerRun)})
	if err != nil || dropped == 0 {
		return err
	}
	return q.RunLogMarkTruncated(ctx, dbsqlc.RunLogMarkTruncatedParams{RunID: runID, Now: micros(now())})
}

// RunLogList returns a page of a run's log lines, oldest first, with its
// truncation mark, from one snapshot.
func (s *Store) RunLogList(ctx context.Context, runID string, after int64, limit int) (db.RunLogPage, error) {
	if limit <= 0 {
		limit = db.DefaultRunLogLimit
	}
	var page db.RunLogPage
	err := s.read(ctx, "run log list", func(q *dbsqlc.Queries) error {
		rows, err := q.RunLogList(ctx, dbsqlc.RunLogListParams{RunID: runID, AfterSeq: after, RowLimit: int64(limit)})
		if err != nil {
			return err
		}
		page.Lines = make([]db.RunLogLine, len(rows))
		for i, r := range rows {
			page.Lines[i] = db.RunLogLine{Seq: r.Seq, TS: fromMicros(r.Ts), Level: r.Level, Line: r.Line}
		}
		page.Truncated, err = q.RunLogTruncated(ctx, runID)
		return err
	})
	return page, err
}

// RunLogPurge deletes log lines older than olderThan and the truncation marks
// of runs left without lines.
func (s *Store) RunLogPurge(ctx context.Context, olderThan time.Duration) (int, error) {
	var purged int64
	err := s.write(ctx, "run log purge", func(ctx context.Context, q *dbsqlc.Queries) error {
		var err error
		if purged, err = q.RunLogPurge(ctx, micros(now().Add(-olderThan))); err != nil {
			return err
		}
		_, err = q.RunLogPurgeTruncations(ctx)
		return err
	})
	return int(purged), err
}
