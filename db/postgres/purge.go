package postgres

import (
	"context"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
)

// Purge applies every cutoff in one transaction.
func (d *driver) Purge(ctx context.Context, p *db.PurgeParams) (db.PurgeReport, error) {
	var rep db.PurgeReport
	err := d.inTx(ctx, func(q *dbsqlc.Queries) error {
		if p.RunsFinishedBefore != nil {
			r, err := q.RunPurge(ctx, *p.RunsFinishedBefore)
			if err != nil {
				return err
			}
			rep.Runs, rep.Shards = int(r.Runs), int(r.Shards)
		}
		orphans, err := q.ShardPurgeOrphans(ctx)
		if err != nil {
			return err
		}
		rep.Shards += int(orphans)
		for _, kind := range []struct {
			before *time.Time
			purge  func(context.Context, time.Time) (int64, error)
			count  *int
		}{
			{p.ClaimsBefore, q.IdempotencyPurge, &rep.IdempotencyClaims},
			{p.InstancesBefore, q.InstancePurge, &rep.Instances},
			{p.AuditBefore, q.AuditPurge, &rep.Audit},
		} {
			if kind.before == nil {
				continue
			}
			n, err := kind.purge(ctx, *kind.before)
			if err != nil {
				return err
			}
			*kind.count = int(n)
		}
		return nil
	})
	if err != nil {
		return db.PurgeReport{}, err
	}
	return rep, nil
}
