package sqlite

import (
	"context"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

// Purge applies every cutoff in one transaction. The logs of expiring runs
// go first, selected by the same predicate, then the runs, then every shard
// left without its run.
func (d *driver) Purge(ctx context.Context, p *db.PurgeParams) (db.PurgeReport, error) {
	var rep db.PurgeReport
	err := d.write(ctx, func(ctx context.Context, q *dbsqlc.Queries) error {
		rep = db.PurgeReport{}
		if p.RunsFinishedBefore != nil {
			b := ptr(micros(*p.RunsFinishedBefore))
			if _, err := q.RunLogPurgeForRuns(ctx, b); err != nil {
				return err
			}
			if _, err := q.RunLogPurgeTruncationsForRuns(ctx, b); err != nil {
				return err
			}
			n, err := q.RunPurge(ctx, b)
			if err != nil {
				return err
			}
			rep.Runs = int(n)
		}
		n, err := q.ShardPurgeOrphans(ctx)
		if err != nil {
			return err
		}
		rep.Shards = int(n)
		for _, kind := range []struct {
			before *time.Time
			purge  func(context.Context, int64) (int64, error)
			count  *int
		}{
			{p.ClaimsBefore, q.IdempotencyPurge, &rep.IdempotencyClaims},
			{p.InstancesBefore, q.InstancePurge, &rep.Instances},
			{p.AuditBefore, q.AuditPurge, &rep.Audit},
		} {
			if kind.before == nil {
				continue
			}
			n, err := kind.purge(ctx, micros(*kind.before))
			if err != nil {
				return err
			}
			*kind.count = int(n)
		}
		return nil
	})
	return rep, err
}
