package postgres

import (
	"context"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
)

// RunLogAppend stores a batch of a run's log lines and applies the per-run
// cap, in one transaction.
func (s *Store) RunLogAppend(ctx context.Context, runID string, lines []db.RunLogLine, maxLinesPerRun int) error {
	if len(lines) == 0 {
		return nil
	}
	p := dbsqlc.RunLogInsertParams{
		RunID:  runID,
		Seqs:   make([]int64, len(lines)),
		Tss:    make([]time.Time, len(lines)),
		Levels: make([]string, len(lines)),
		Lines:  make([]string, len(lines)),
	}
	for i, l := range lines {
		p.Seqs[i], p.Tss[i], p.Levels[i], p.Lines[i] = l.Seq, micro(l.TS), l.Level, l.Line
	}
	return fail("run log append", s.inTx(ctx, func(q *dbsqlc.Queries) error {
		if _, err := q.RunLogInsert(ctx, p); err != nil {
			return err
		}
		if maxLinesPerRun <= 0 {
			return nil
		}
		start, end := db.LogBlock(lines[len(lines)-1].Seq)
		return q.RunLogTrim(ctx, dbsqlc.RunLogTrimParams{RunID: runID, Now: now(), Keep: int64(maxLinesPerRun), BlockStart: start, BlockEnd: end})
	}))
}

// RunLogList returns a page of a run's lines after seq after, oldest first.
func (s *Store) RunLogList(ctx context.Context, runID string, after int64, limit int) (db.RunLogPage, error) {
	const op = "run log list"
	if limit <= 0 {
		limit = db.DefaultRunLogLimit
	}
	rows, err := s.q.RunLogList(ctx, dbsqlc.RunLogListParams{RunID: runID, After: after, PageLimit: int32(limit)})
	if err != nil {
		return db.RunLogPage{}, fail(op, err)
	}
	truncated, err := s.q.RunLogTruncated(ctx, runID)
	if err != nil {
		return db.RunLogPage{}, fail(op, err)
	}
	page := db.RunLogPage{Lines: make([]db.RunLogLine, len(rows)), Truncated: truncated}
	for i, r := range rows {
		page.Lines[i] = db.RunLogLine{Seq: r.Seq, TS: r.Ts.UTC(), Level: r.Level, Line: r.Line}
	}
	return page, nil
}

// RunLogPurge deletes lines captured longer than olderThan ago.
func (s *Store) RunLogPurge(ctx context.Context, olderThan time.Duration) (int, error) {
	n, err := s.q.RunLogPurge(ctx, now().Add(-olderThan))
	return int(n), fail("run log purge", err)
}
