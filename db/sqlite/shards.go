package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

// encodeShards is the JSON array of shards ShardInsert takes.
func encodeShards(runID string, shards []db.ShardInsert) (string, error) {
	type shard struct {
		ShardID      string          `json:"shard_id"`
		Descriptor   json.RawMessage `json:"descriptor"`
		SizeEstimate *int64          `json:"size_estimate"`
	}
	rows := make([]shard, len(shards))
	for i, sh := range shards {
		rows[i] = shard{ShardID: sh.ShardID, Descriptor: sh.Descriptor, SizeEstimate: sh.SizeEstimate}
	}
	b, err := json.Marshal(rows)
	if err != nil {
		return "", &db.Error{Transience: db.Permanent, Err: fmt.Errorf("encode shards of run %s: %w", runID, err)}
	}
	return string(b), nil
}

// RunShard marks the run sharded and inserts its shards in one transaction.
func (d *driver) RunShard(ctx context.Context, p *db.RunShardParams) (bool, error) {
	var b string
	if len(p.Shards) > 0 {
		var err error
		if b, err = encodeShards(p.RunID, p.Shards); err != nil {
			return false, err
		}
	}
	var marked bool
	err := d.write(ctx, func(ctx context.Context, q *dbsqlc.Queries) error {
		marked = false
		cancelRequested, err := q.RunMarkSharded(ctx, dbsqlc.RunMarkShardedParams{RunID: p.RunID, Owner: &p.Owner})
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return err
		}
		if marked = true; b == "" {
			return nil
		}
		if _, err := q.ShardInsert(ctx, dbsqlc.ShardInsertParams{RunID: p.RunID, Shards: b}); err != nil || !cancelRequested {
			return err
		}
		// No claimer takes the shards of a run with a cancel request.
		_, err = q.ShardCancelPending(ctx, dbsqlc.ShardCancelPendingParams{RunID: p.RunID, Now: ptr(micros(p.Now)), Error: &p.CancelledError})
		return err
	})
	return marked, err
}

func (d *driver) RunFinalizeShardedParent(ctx context.Context, p *db.RunFinalizeShardedParentParams) (bool, error) {
	arg := dbsqlc.RunFinalizeShardedParentParams{Status: string(p.Status), FinishedAt: ptr(micros(p.FinishedAt)), Error: p.Error, RunID: p.RunID}
	return one(writeValue(ctx, d, func(ctx context.Context, q *dbsqlc.Queries) (int64, error) {
		return q.RunFinalizeShardedParent(ctx, arg)
	}))
}

// ShardClaim claims in one statement, then reads the claimed shards' parent
// runs in the same transaction.
func (d *driver) ShardClaim(ctx context.Context, p *db.ShardClaimParams) ([]db.ShardClaimRow, error) {
	var claimed []db.ShardClaimRow
	err := d.write(ctx, func(ctx context.Context, q *dbsqlc.Queries) error {
		rows, err := q.ShardClaim(ctx, dbsqlc.ShardClaimParams{Owner: &p.Owner, LeaseExpiresAt: ptr(micros(p.LeaseExpiresAt)), RowLimit: int64(p.Limit)})
		if err != nil || len(rows) == 0 {
			return err
		}
		ids := make([]string, 0, len(rows))
		for _, r := range rows {
			ids = append(ids, r.RunID)
		}
		idsJSON, err := json.Marshal(slices.Compact(slices.Sorted(slices.Values(ids))))
		if err != nil {
			return err
		}
		parents, err := q.RunGetMany(ctx, string(idsJSON))
		if err != nil {
			return err
		}
		runs := make(map[string]db.RunRow, len(parents))
		for _, pr := range parents {
			runs[pr.RunID] = runRow(pr)
		}
		claimed = make([]db.ShardClaimRow, len(rows))
		for i, r := range rows {
			claimed[i] = db.ShardClaimRow{
				RunID: r.RunID, ShardID: r.ShardID, Descriptor: []byte(r.Descriptor), SizeEstimate: r.SizeEstimate,
				Attempt: int(r.Attempt), Run: runs[r.RunID],
			}
		}
		return nil
	})
	return claimed, err
}

func (d *driver) ShardRenewLeases(ctx context.Context, p *db.LeaseParams) ([]db.ShardKey, error) {
	arg := dbsqlc.ShardRenewLeasesParams{LeaseExpiresAt: ptr(micros(p.LeaseExpiresAt)), Owner: &p.Owner}
	rows, err := writeValue(ctx, d, func(ctx context.Context, q *dbsqlc.Queries) ([]dbsqlc.ShardRenewLeasesRow, error) {
		return q.ShardRenewLeases(ctx, arg)
	})
	if err != nil {
		return nil, err
	}
	keys := make([]db.ShardKey, len(rows))
	for i, r := range rows {
		keys[i] = db.ShardKey{RunID: r.RunID, ShardID: r.ShardID}
	}
	return keys, nil
}

// ShardRequeueLapsed fails the lapsed shards at the attempt cap, then
// requeues the rest, in one transaction.
func (d *driver) ShardRequeueLapsed(ctx context.Context, p *db.RequeueLapsedParams) (db.ReclaimReport, error) {
	now := ptr(micros(p.Now))
	return d.requeue(ctx,
		func(ctx context.Context, q *dbsqlc.Queries) (int64, error) {
			return q.ShardPoisonLapsed(ctx, dbsqlc.ShardPoisonLapsedParams{Now: now, ErrorFormat: p.PoisonFormat, MaxAttempts: int64(p.MaxAttempts)})
		},
		func(ctx context.Context, q *dbsqlc.Queries) (int64, error) {
			return q.ShardRequeueLapsed(ctx, dbsqlc.ShardRequeueLapsedParams{Now: now, MaxAttempts: int64(p.MaxAttempts)})
		})
}

func (d *driver) ShardRelease(ctx context.Context, p *db.ShardReleaseParams) (bool, error) {
	arg := dbsqlc.ShardReleaseParams{RunID: p.RunID, ShardID: p.ShardID, Owner: &p.Owner}
	return one(writeValue(ctx, d, func(ctx context.Context, q *dbsqlc.Queries) (int64, error) { return q.ShardRelease(ctx, arg) }))
}

func (d *driver) ShardFinalize(ctx context.Context, p *db.ShardFinalizeParams) (bool, error) {
	arg := dbsqlc.ShardFinalizeParams{
		Status: string(p.Result.Status), RecordsWritten: p.Result.RecordsWritten, Error: p.Result.Error,
		Now: ptr(micros(p.Now)), RunID: p.RunID, ShardID: p.ShardID, Owner: &p.Owner, Lineage: textPtr(p.Result.Lineage),
	}
	return one(writeValue(ctx, d, func(ctx context.Context, q *dbsqlc.Queries) (int64, error) { return q.ShardFinalize(ctx, arg) }))
}

func (d *driver) ShardLineages(ctx context.Context, runID string) ([]json.RawMessage, error) {
	rows, err := d.rq.ShardLineageList(ctx, runID)
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]json.RawMessage, len(rows))
	for i, r := range rows {
		out[i] = json.RawMessage(r)
	}
	return out, nil
}

func (d *driver) ShardProgress(ctx context.Context, runID string) (db.ShardProgress, error) {
	r, err := d.rq.ShardProgress(ctx, runID)
	return shardProgress(r), interpretError(err)
}

func (d *driver) ShardList(ctx context.Context, runID string) ([]db.ShardRecord, error) {
	rows, err := d.rq.ShardList(ctx, runID)
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]db.ShardRecord, len(rows))
	for i, r := range rows {
		out[i] = db.ShardRecord{
			ShardID: r.ShardID, Status: db.ShardStatus(r.Status), Owner: r.Owner, Attempt: int(r.Attempt),
			RecordsWritten: r.RecordsWritten, SizeEstimate: r.SizeEstimate, Error: r.Error, FinishedAt: fromMicrosPtr(r.FinishedAt),
		}
	}
	return out, nil
}

// shardProgress converts a shard count row; every count query returns this
// shape.
func shardProgress(r dbsqlc.ShardProgressRow) db.ShardProgress {
	return db.ShardProgress{
		Total: int(r.Total), Pending: int(r.Pending), Running: int(r.Running), Completed: int(r.Completed),
		Failed: int(r.Failed), Cancelled: int(r.Cancelled), RecordsWritten: r.RecordsWritten,
	}
}

func (d *driver) ShardProgressInFlight(ctx context.Context) (db.ShardProgress, error) {
	r, err := d.rq.ShardProgressInFlight(ctx)
	return shardProgress(dbsqlc.ShardProgressRow(r)), interpretError(err)
}

func (d *driver) ShardPendingCancellations(ctx context.Context, owner string) ([]string, error) {
	ids, err := d.rq.ShardPendingCancellations(ctx, &owner)
	return ids, interpretError(err)
}

func (d *driver) ShardCancelStranded(ctx context.Context, p *db.ShardCancelStrandedParams) (int, error) {
	arg := dbsqlc.ShardCancelStrandedParams{Now: ptr(micros(p.Now)), Error: &p.Error}
	return count(writeValue(ctx, d, func(ctx context.Context, q *dbsqlc.Queries) (int64, error) { return q.ShardCancelStranded(ctx, arg) }))
}

func (d *driver) ShardCompletedParents(ctx context.Context) ([]db.ShardedParent, error) {
	rows, err := d.rq.ShardCompletedParents(ctx)
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]db.ShardedParent, len(rows))
	for i, r := range rows {
		out[i] = db.ShardedParent{RunID: r.RunID, Total: int(r.Total), Failed: int(r.Failed), Cancelled: int(r.Cancelled)}
	}
	return out, nil
}
