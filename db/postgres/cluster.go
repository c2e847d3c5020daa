package postgres

import (
	"context"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
)

func (d *driver) InstanceHeartbeat(ctx context.Context, p *db.InstanceHeartbeatParams) error {
	return interpretError(d.q.InstanceHeartbeat(ctx, dbsqlc.InstanceHeartbeatParams{
		InstanceID: p.InstanceID, StartedAt: p.StartedAt, Now: p.Now, Listen: p.Listen,
		MaxConcurrent: int32(p.MaxConcurrent), InFlight: int32(p.InFlight), StateFormat: int32(p.StateFormat),
	}))
}

func (d *driver) InstanceListLive(ctx context.Context, since time.Time) ([]db.InstanceRecord, error) {
	rows, err := d.q.InstanceListLive(ctx, since)
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]db.InstanceRecord, len(rows))
	for i, r := range rows {
		out[i] = db.InstanceRecord{
			InstanceID: r.InstanceID, StartedAt: r.StartedAt.UTC(), LastHeartbeat: r.LastHeartbeat.UTC(), Listen: r.Listen,
			MaxConcurrent: int(r.MaxConcurrent), InFlight: int(r.InFlight), StateFormat: int(r.StateFormat),
		}
	}
	return out, nil
}

func (d *driver) InstanceWorkList(ctx context.Context) ([]db.InstanceWork, error) {
	rows, err := d.q.InstanceWorkList(ctx)
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]db.InstanceWork, len(rows))
	for i, r := range rows {
		out[i] = db.InstanceWork{Owner: r.Owner, RunID: r.RunID, ShardID: r.ShardID, Name: r.Name}
	}
	return out, nil
}

func (d *driver) RunClaimPending(ctx context.Context, p *db.RunClaimPendingParams) ([]db.RunRow, error) {
	rows, err := d.q.RunClaimPending(ctx, dbsqlc.RunClaimPendingParams{
		Now: p.Now, Owner: p.Owner, LeaseExpiresAt: p.LeaseExpiresAt, ClaimLimit: int32(p.Limit),
	})
	if err != nil {
		return nil, interpretError(err)
	}
	return runRows(rows), nil
}

func (d *driver) RunRequeueLapsed(ctx context.Context, p *db.RequeueLapsedParams) (db.ReclaimReport, error) {
	return d.requeue(ctx,
		func(q *dbsqlc.Queries) (int64, error) {
			return q.RunPoisonLapsed(ctx, dbsqlc.RunPoisonLapsedParams{Now: p.Now, ErrorFormat: p.PoisonFormat, MaxAttempts: int32(p.MaxAttempts)})
		},
		func(q *dbsqlc.Queries) (int64, error) {
			return q.RunRequeueLapsed(ctx, dbsqlc.RunRequeueLapsedParams{Now: p.Now, MaxAttempts: int32(p.MaxAttempts)})
		})
}

// requeue runs a poison and a requeue statement in one transaction. They
// select disjoint rows (attempt at or past the cap, below it), and each is
// fenced on the lapsed lease, so concurrent reclaimers count every row once.
func (d *driver) requeue(ctx context.Context, poison, requeue func(*dbsqlc.Queries) (int64, error)) (db.ReclaimReport, error) {
	var rep db.ReclaimReport
	err := d.inTx(ctx, func(q *dbsqlc.Queries) error {
		poisoned, err := poison(q)
		if err != nil {
			return err
		}
		requeued, err := requeue(q)
		rep = db.ReclaimReport{Requeued: int(requeued), Poisoned: int(poisoned)}
		return err
	})
	if err != nil {
		return db.ReclaimReport{}, err
	}
	return rep, nil
}

func (d *driver) RunRelease(ctx context.Context, p *db.RunReleaseParams) (bool, error) {
	return one(d.q.RunRelease(ctx, dbsqlc.RunReleaseParams{RunID: p.RunID, Owner: p.Owner}))
}

// RunSetProgress updates every run in one statement.
func (d *driver) RunSetProgress(ctx context.Context, p *db.RunSetProgressParams) (int, error) {
	arg := dbsqlc.RunSetProgressParams{Owner: p.Owner, RunIds: make([]string, len(p.Runs)), Records: make([]int64, len(p.Runs))}
	for i, r := range p.Runs {
		arg.RunIds[i], arg.Records[i] = r.RunID, r.RecordsWritten
	}
	return count(d.q.RunSetProgress(ctx, arg))
}

func (d *driver) RunPendingCancellations(ctx context.Context, owner string) ([]string, error) {
	return result(d.q.RunPendingCancellations(ctx, owner))
}
