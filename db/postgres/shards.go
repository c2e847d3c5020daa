package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
)

// shardDoc is one shard in the JSON array RunShard sends in one parameter.
type shardDoc struct {
	ShardID      string          `json:"shard_id"`
	Descriptor   json.RawMessage `json:"descriptor"`
	SizeEstimate *int64          `json:"size_estimate"`
}

// RunShard marks the run sharded and inserts its shards in one statement.
func (d *driver) RunShard(ctx context.Context, p *db.RunShardParams) (bool, error) {
	docs := make([]shardDoc, len(p.Shards))
	for i, sh := range p.Shards {
		docs[i] = shardDoc{ShardID: sh.ShardID, Descriptor: sh.Descriptor, SizeEstimate: sh.SizeEstimate}
	}
	payload, err := json.Marshal(docs)
	if err != nil {
		return false, &db.Error{Transience: db.Permanent, Err: fmt.Errorf("encode shards of run %s: %w", p.RunID, err)}
	}
	return one(d.q.RunShard(ctx, dbsqlc.RunShardParams{
		RunID: p.RunID, Owner: p.Owner, Now: p.Now, CancelledError: p.CancelledError, Shards: payload,
	}))
}

func (d *driver) RunFinalizeShardedParent(ctx context.Context, p *db.RunFinalizeShardedParentParams) (bool, error) {
	return one(d.q.RunFinalizeShardedParent(ctx, dbsqlc.RunFinalizeShardedParentParams{
		Status: string(p.Status), FinishedAt: p.FinishedAt, Error: p.Error, RunID: p.RunID,
	}))
}

func (d *driver) ShardClaim(ctx context.Context, p *db.ShardClaimParams) ([]db.ShardClaimRow, error) {
	rows, err := d.q.ShardClaim(ctx, dbsqlc.ShardClaimParams{Owner: p.Owner, LeaseExpiresAt: p.LeaseExpiresAt, ClaimLimit: int32(p.Limit)})
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]db.ShardClaimRow, len(rows))
	for i, r := range rows {
		out[i] = db.ShardClaimRow{
			RunID: r.RunID, ShardID: r.ShardID, Descriptor: r.Descriptor, SizeEstimate: r.SizeEstimate, Attempt: int(r.Attempt),
			Run: runRow(dbsqlc.FaucetRun{
				RunID: r.RunID, Name: r.Name, Labels: r.Labels, Status: r.Status,
				SubmittedAt: r.SubmittedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
				IdempotencyKey: r.IdempotencyKey, Attempt: r.RunAttempt, RecordsWritten: r.RecordsWritten,
				Error: r.Error, Submission: r.Submission, Invocations: r.Invocations,
				TemplateID: r.TemplateID, TemplateVersion: r.TemplateVersion,
			}),
		}
	}
	return out, nil
}

func (d *driver) ShardRenewLeases(ctx context.Context, p *db.LeaseParams) ([]db.ShardKey, error) {
	rows, err := d.q.ShardRenewLeases(ctx, dbsqlc.ShardRenewLeasesParams{LeaseExpiresAt: p.LeaseExpiresAt, Owner: p.Owner})
	if err != nil {
		return nil, interpretError(err)
	}
	keys := make([]db.ShardKey, len(rows))
	for i, r := range rows {
		keys[i] = db.ShardKey{RunID: r.RunID, ShardID: r.ShardID}
	}
	return keys, nil
}

func (d *driver) ShardRequeueLapsed(ctx context.Context, p *db.RequeueLapsedParams) (db.ReclaimReport, error) {
	return d.requeue(ctx,
		func(q *dbsqlc.Queries) (int64, error) {
			return q.ShardPoisonLapsed(ctx, dbsqlc.ShardPoisonLapsedParams{Now: p.Now, ErrorFormat: p.PoisonFormat, MaxAttempts: int32(p.MaxAttempts)})
		},
		func(q *dbsqlc.Queries) (int64, error) {
			return q.ShardRequeueLapsed(ctx, dbsqlc.ShardRequeueLapsedParams{Now: p.Now, MaxAttempts: int32(p.MaxAttempts)})
		})
}

func (d *driver) ShardRelease(ctx context.Context, p *db.ShardReleaseParams) (bool, error) {
	return one(d.q.ShardRelease(ctx, dbsqlc.ShardReleaseParams{RunID: p.RunID, ShardID: p.ShardID, Owner: p.Owner}))
}

func (d *driver) ShardFinalize(ctx context.Context, p *db.ShardFinalizeParams) (bool, error) {
	return one(d.q.ShardFinalize(ctx, dbsqlc.ShardFinalizeParams{
		Status: string(p.Result.Status), RecordsWritten: p.Result.RecordsWritten, Error: p.Result.Error,
		Now: p.Now, RunID: p.RunID, ShardID: p.ShardID, Owner: p.Owner, Lineage: p.Result.Lineage,
	}))
}

func (d *driver) ShardLineages(ctx context.Context, runID string) ([]json.RawMessage, error) {
	rows, err := d.q.ShardLineageList(ctx, runID)
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]json.RawMessage, len(rows))
	for i, r := range rows {
		out[i] = r
	}
	return out, nil
}

func (d *driver) ShardProgress(ctx context.Context, runID string) (db.ShardProgress, error) {
	r, err := d.q.ShardProgress(ctx, runID)
	return shardProgress(r), interpretError(err)
}

func (d *driver) ShardList(ctx context.Context, runID string) ([]db.ShardRecord, error) {
	rows, err := d.q.ShardList(ctx, runID)
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]db.ShardRecord, len(rows))
	for i, r := range rows {
		var finished *time.Time
		if r.FinishedAt != nil {
			t := r.FinishedAt.UTC()
			finished = &t
		}
		out[i] = db.ShardRecord{
			ShardID: r.ShardID, Status: db.ShardStatus(r.Status), Owner: r.Owner, Attempt: int(r.Attempt),
			RecordsWritten: r.RecordsWritten, SizeEstimate: r.SizeEstimate, Error: r.Error, FinishedAt: finished,
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
	r, err := d.q.ShardProgressInFlight(ctx)
	return shardProgress(dbsqlc.ShardProgressRow(r)), interpretError(err)
}

func (d *driver) ShardPendingCancellations(ctx context.Context, owner string) ([]string, error) {
	return result(d.q.ShardPendingCancellations(ctx, owner))
}

func (d *driver) ShardCancelStranded(ctx context.Context, p *db.ShardCancelStrandedParams) (int, error) {
	return count(d.q.ShardCancelStranded(ctx, dbsqlc.ShardCancelStrandedParams{Now: p.Now, Error: p.Error}))
}

func (d *driver) ShardCompletedParents(ctx context.Context) ([]db.ShardedParent, error) {
	rows, err := d.q.ShardCompletedParents(ctx)
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]db.ShardedParent, len(rows))
	for i, r := range rows {
		out[i] = db.ShardedParent{RunID: r.RunID, Total: int(r.Total), Failed: int(r.Failed), Cancelled: int(r.Cancelled)}
	}
	return out, nil
}
