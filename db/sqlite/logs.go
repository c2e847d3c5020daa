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
func (d *driver) RunLogAppend(ctx context.Context, p *db.RunLogAppendParams) error {
	b, err := encodeLines(p.RunID, p.Lines)
	if err != nil {
		return err
	}
	return d.write(ctx, func(ctx context.Context, q *dbsqlc.Queries) error {
		return appendLines(ctx, q, p.RunID, b, p.Trim)
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
		return "", &db.Error{Transience: db.Permanent, Err: fmt.Errorf("encode log lines of run %s: %w", runID, err)}
	}
	return string(b), nil
}

// appendLines inserts encoded lines and applies trim inside the caller's
// transaction.
func appendLines(ctx context.Context, q *dbsqlc.Queries, runID, lines string, trim *db.LogTrim) error {
	if _, err := q.RunLogInsert(ctx, dbsqlc.RunLogInsertParams{RunID: runID, Lines: lines}); err != nil || trim == nil {
		return err
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
