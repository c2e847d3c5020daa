package postgres

import (
	"context"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
)

// RunLogAppend stores a batch of lines and applies the per-run cap in one
// transaction.
func (d *driver) RunLogAppend(ctx context.Context, p *db.RunLogAppendParams) error {
	arg := dbsqlc.RunLogInsertParams{RunID: p.RunID}
	arg.Seqs, arg.Tss, arg.Levels, arg.Lines = lineColumns(p.Lines)
	return d.inTx(ctx, func(q *dbsqlc.Queries) error {
		if _, err := q.RunLogInsert(ctx, arg); err != nil || p.Trim == nil {
			return err
		}
		return q.RunLogTrim(ctx, trimParams(p.RunID, p.Trim))
	})
}

func trimParams(runID string, t *db.LogTrim) dbsqlc.RunLogTrimParams {
	return dbsqlc.RunLogTrimParams{RunID: runID, Now: t.Now, Keep: t.Keep, BlockStart: t.BlockStart, BlockEnd: t.BlockEnd}
}

func (d *driver) RunLogList(ctx context.Context, p *db.RunLogListParams) (db.RunLogPage, error) {
	rows, err := d.q.RunLogList(ctx, dbsqlc.RunLogListParams{RunID: p.RunID, After: p.After, PageLimit: int32(p.Limit)})
	if err != nil {
		return db.RunLogPage{}, interpretError(err)
	}
	truncated, err := d.q.RunLogTruncated(ctx, p.RunID)
	if err != nil {
		return db.RunLogPage{}, interpretError(err)
	}
	page := db.RunLogPage{Lines: make([]db.RunLogLine, len(rows)), Truncated: truncated}
	for i, r := range rows {
		page.Lines[i] = db.RunLogLine{Seq: r.Seq, TS: r.Ts.UTC(), Level: r.Level, Line: r.Line}
	}
	return page, nil
}

func (d *driver) RunLogPurge(ctx context.Context, before time.Time) (int, error) {
	return count(d.q.RunLogPurge(ctx, before))
}
