package sqlite

import (
	"context"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

func (d *driver) LocalOutputUpsert(ctx context.Context, p *db.LocalOutputUpsertParams) (db.LocalOutput, error) {
	arg := localOutputArg(p)
	row, err := writeValue(ctx, d, func(ctx context.Context, q *dbsqlc.Queries) (dbsqlc.FaucetLocalOutput, error) {
		return q.LocalOutputUpsert(ctx, arg)
	})
	return localOutput(row), err
}

func localOutputArg(p *db.LocalOutputUpsertParams) dbsqlc.LocalOutputUpsertParams {
	return dbsqlc.LocalOutputUpsertParams{
		ID: p.ID, Path: p.Path, SizeBytes: p.SizeBytes, RunID: p.RunID, WrittenAt: micros(p.At),
		ExistedBefore: boolInt(p.Existed), FileID: nonEmpty(p.FileID),
	}
}

func (d *driver) LocalOutputGet(ctx context.Context, id string) (db.LocalOutput, error) {
	row, err := d.rq.LocalOutputGet(ctx, id)
	return localOutput(row), interpretError(err)
}

func (d *driver) LocalOutputList(ctx context.Context, p *db.LocalOutputListParams) ([]db.LocalOutput, error) {
	var (
		rows []dbsqlc.FaucetLocalOutput
		err  error
	)
	if p.RunID != nil {
		rows, err = d.rq.LocalOutputListByRun(ctx, dbsqlc.LocalOutputListByRunParams{RunID: *p.RunID, PathPrefix: p.PathPrefix, Cursor: p.Cursor, RowLimit: int64(p.Limit)})
	} else {
		rows, err = d.rq.LocalOutputList(ctx, dbsqlc.LocalOutputListParams{PathPrefix: p.PathPrefix, Cursor: p.Cursor, RowLimit: int64(p.Limit)})
	}
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]db.LocalOutput, len(rows))
	for i, r := range rows {
		out[i] = localOutput(r)
	}
	return out, nil
}

func (d *driver) LocalOutputMarkDeleted(ctx context.Context, id string, at time.Time) (db.LocalOutput, error) {
	arg := dbsqlc.LocalOutputMarkDeletedParams{ID: id, DeletedAt: ptr(micros(at))}
	row, err := writeValue(ctx, d, func(ctx context.Context, q *dbsqlc.Queries) (dbsqlc.FaucetLocalOutput, error) {
		return q.LocalOutputMarkDeleted(ctx, arg)
	})
	return localOutput(row), err
}

func localOutput(r dbsqlc.FaucetLocalOutput) db.LocalOutput {
	out := db.LocalOutput{
		ID: r.ID, Path: r.Path, SizeBytes: r.SizeBytes, RunID: r.RunID, FirstRunID: r.FirstRunID,
		FirstWrittenAt: fromMicros(r.FirstWrittenAt), LastWrittenAt: fromMicros(r.LastWrittenAt),
		ExistedBefore: r.ExistedBefore != 0, DeletedAt: fromMicrosPtr(r.DeletedAt),
	}
	if r.FileID != nil {
		out.FileID = *r.FileID
	}
	return out
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
