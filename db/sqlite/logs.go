package sqlite

import (
	"context"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

// RunLogAppend stores a batch of log lines and applies the per-run cap, in
// one transaction.
func (d *driver) RunLogAppend(ctx context.Context, p *db.RunLogAppendParams) error {
	return d.writePatient(ctx, func(ctx context.Context, q *dbsqlc.Queries) error {
		return appendLines(ctx, q, p.RunID, p.Lines, p.Trim)
	})
}

// appendLines inserts lines and applies trim inside the caller's
// transaction.
func appendLines(ctx context.Context, q *dbsqlc.Queries, runID string, lines []db.RunLogLine, trim *db.LogTrim) error {
	for _, l := range lines {
		if err := q.RunLogInsert(ctx, dbsqlc.RunLogInsertParams{RunID: runID, Seq: l.Seq, Ts: micros(l.TS), Level: l.Level, Line: l.Line}); err != nil {
			return err
		}
	}
	if trim == nil {
		return nil
	}
	dropped, err := q.RunLogTrim(ctx, dbsqlc.RunLogTrimParams{RunID: runID, BlockStart: trim.BlockStart, BlockEnd: trim.BlockEnd, Keep: trim.Keep})
	if err != nil || dropped == 0 {
		return err
	}
	return q.RunLogMarkTruncated(ctx, dbsqlc.RunLogMarkTruncatedParams{RunID: runID, Now: micros(trim.Now)})
}

// RunLogList reads a page of a run's log lines and its truncation mark from
// one snapshot.
func (d *driver) RunLogList(ctx context.Context, p *db.RunLogListParams) (db.RunLogPage, error) {
	var page db.RunLogPage
	err := d.read(ctx, func(q *dbsqlc.Queries) error {
		rows, err := q.RunLogList(ctx, dbsqlc.RunLogListParams{RunID: p.RunID, AfterSeq: p.After, RowLimit: int64(p.Limit)})
		if err != nil {
			return err
		}
		page.Lines = make([]db.RunLogLine, len(rows))
		for i, r := range rows {
			page.Lines[i] = db.RunLogLine{Seq: r.Seq, TS: fromMicros(r.Ts), Level: r.Level, Line: r.Line}
		}
		page.Truncated, err = q.RunLogTruncated(ctx, p.RunID)
		return err
	})
	return page, err
}

// RunLogPurge deletes old lines and the truncation marks of runs left
// without lines in one transaction.
func (d *driver) RunLogPurge(ctx context.Context, before time.Time) (int, error) {
	var purged int64
	err := d.write(ctx, func(ctx context.Context, q *dbsqlc.Queries) error {
		var err error
		if purged, err = q.RunLogPurge(ctx, micros(before)); err != nil {
			return err
		}
		_, err = q.RunLogPurgeTruncations(ctx)
		return err
	})
	return int(purged), err
}
