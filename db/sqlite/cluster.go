package sqlite

import (
	"context"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

func (d *driver) InstanceHeartbeat(ctx context.Context, p *db.InstanceHeartbeatParams) error {
	arg := dbsqlc.InstanceHeartbeatParams{
		InstanceID: p.InstanceID, StartedAt: micros(p.StartedAt), LastHeartbeat: micros(p.Now), Listen: p.Listen,
		MaxConcurrent: int64(p.MaxConcurrent), InFlight: int64(p.InFlight), StateFormat: int64(p.StateFormat),
	}
	return d.writeOne(ctx, func(ctx context.Context, q *dbsqlc.Queries) error { return q.InstanceHeartbeat(ctx, arg) })
}

func (d *driver) InstanceListLive(ctx context.Context, since time.Time) ([]db.InstanceRecord, error) {
	rows, err := d.rq.InstanceListLive(ctx, micros(since))
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]db.InstanceRecord, len(rows))
	for i, r := range rows {
		out[i] = db.InstanceRecord{
			InstanceID: r.InstanceID, StartedAt: fromMicros(r.StartedAt), LastHeartbeat: fromMicros(r.LastHeartbeat),
			Listen: r.Listen, MaxConcurrent: int(r.MaxConcurrent), InFlight: int(r.InFlight), StateFormat: int(r.StateFormat),
		}
	}
	return out, nil
}

func (d *driver) InstanceWorkList(ctx context.Context) ([]db.InstanceWork, error) {
	rows, err := d.rq.InstanceWorkList(ctx)
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
	arg := dbsqlc.RunClaimPendingParams{
		Now: ptr(micros(p.Now)), Owner: &p.Owner, LeaseExpiresAt: ptr(micros(p.LeaseExpiresAt)), RowLimit: int64(p.Limit),
	}
	rows, err := writeValue(ctx, d, func(ctx context.Context, q *dbsqlc.Queries) ([]dbsqlc.FaucetRun, error) {
		return q.RunClaimPending(ctx, arg)
	})
	if err != nil {
		return nil, err
	}
	return runRows(rows), nil
}

// RunRequeueLapsed fails the lapsed runs at the attempt cap, then requeues
// the rest, in one transaction.
func (d *driver) RunRequeueLapsed(ctx context.Context, p *db.RequeueLapsedParams) (db.ReclaimReport, error) {
	now := ptr(micros(p.Now))
	return d.requeue(ctx,
		func(ctx context.Context, q *dbsqlc.Queries) (int64, error) {
			return q.RunPoisonLapsed(ctx, dbsqlc.RunPoisonLapsedParams{Now: now, ErrorFormat: p.PoisonFormat, MaxAttempts: int64(p.MaxAttempts)})
		},
		func(ctx context.Context, q *dbsqlc.Queries) (int64, error) {
			return q.RunRequeueLapsed(ctx, dbsqlc.RunRequeueLapsedParams{Now: now, MaxAttempts: int64(p.MaxAttempts)})
		})
}

// requeue runs a poison and a requeue statement in one write transaction:
// they select disjoint rows (attempt at or past the cap, below it).
func (d *driver) requeue(ctx context.Context, poison, requeue func(context.Context, *dbsqlc.Queries) (int64, error)) (db.ReclaimReport, error) {
	var rep db.ReclaimReport
	err := d.write(ctx, func(ctx context.Context, q *dbsqlc.Queries) error {
		poisoned, err := poison(ctx, q)
		if err != nil {
			return err
		}
		requeued, err := requeue(ctx, q)
		rep = db.ReclaimReport{Requeued: int(requeued), Poisoned: int(poisoned)}
		return err
	})
	return rep, err
}

func (d *driver) RunRelease(ctx context.Context, p *db.RunReleaseParams) (bool, error) {
	arg := dbsqlc.RunReleaseParams{RunID: p.RunID, Owner: &p.Owner}
	return one(writeValue(ctx, d, func(ctx context.Context, q *dbsqlc.Queries) (int64, error) { return q.RunRelease(ctx, arg) }))
}

// RunSetProgress updates the runs in one transaction.
func (d *driver) RunSetProgress(ctx context.Context, p *db.RunSetProgressParams) (int, error) {
	var updated int64
	err := d.write(ctx, func(ctx context.Context, q *dbsqlc.Queries) error {
		updated = 0
		for _, r := range p.Runs {
			n, err := q.RunSetProgress(ctx, dbsqlc.RunSetProgressParams{RecordsWritten: r.RecordsWritten, RunID: r.RunID, Owner: &p.Owner})
			if err != nil {
				return err
			}
			updated += n
		}
		return nil
	})
	return int(updated), err
}

func (d *driver) RunPendingCancellations(ctx context.Context, owner string) ([]string, error) {
	ids, err := d.rq.RunPendingCancellations(ctx, &owner)
	return ids, interpretError(err)
}
