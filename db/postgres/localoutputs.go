package postgres

import (
	"context"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
)

func (d *driver) LocalOutputUpsert(ctx context.Context, p *db.LocalOutputUpsertParams) (db.LocalOutput, error) {
	row, err := d.q.LocalOutputUpsert(ctx, localOutputArg(p))
	return localOutput(row), interpretError(err)
}

func localOutputArg(p *db.LocalOutputUpsertParams) dbsqlc.LocalOutputUpsertParams {
	return dbsqlc.LocalOutputUpsertParams{
		ID: p.ID, Path: p.Path, SizeBytes: p.SizeBytes, RunID: p.RunID, WrittenAt: p.At,
		ExistedBefore: p.Existed, FileID: nonEmpty(p.FileID),
	}
}

func (d *driver) LocalOutputGet(ctx context.Context, id string) (db.LocalOutput, error) {
	row, err := d.q.LocalOutputGet(ctx, id)
	return localOutput(row), interpretError(err)
}

func (d *driver) LocalOutputList(ctx context.Context, p *db.LocalOutputListParams) ([]db.LocalOutput, error) {
	var (
		rows []dbsqlc.FaucetLocalOutput
		err  error
	)
	if p.RunID != nil {
		rows, err = d.q.LocalOutputListByRun(ctx, dbsqlc.LocalOutputListByRunParams{RunID: *p.RunID, PathPrefix: p.PathPrefix, Cursor: p.Cursor, PageLimit: int32(p.Limit)})
	} else {
		rows, err = d.q.LocalOutputList(ctx, dbsqlc.LocalOutputListParams{PathPrefix: p.PathPrefix, Cursor: p.Cursor, PageLimit: int32(p.Limit)})
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
	row, err := d.q.LocalOutputMarkDeleted(ctx, dbsqlc.LocalOutputMarkDeletedParams{ID: id, DeletedAt: &at})
	return localOutput(row), interpretError(err)
}

func localOutput(r dbsqlc.FaucetLocalOutput) db.LocalOutput {
	out := db.LocalOutput{
		ID: r.ID, Path: r.Path, SizeBytes: r.SizeBytes, RunID: r.RunID, FirstRunID: r.FirstRunID,
		FirstWrittenAt: r.FirstWrittenAt.UTC(), LastWrittenAt: r.LastWrittenAt.UTC(),
		ExistedBefore: r.ExistedBefore, DeletedAt: utc(r.DeletedAt),
	}
	if r.FileID != nil {
		out.FileID = *r.FileID
	}
	return out
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
