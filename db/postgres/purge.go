package postgres

import (
	"context"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
)

// Purge applies the retention policy in one transaction.
func (s *Store) Purge(ctx context.Context, p db.PurgePolicy) (db.PurgeReport, error) {
	var rep db.PurgeReport
	t := now()
	err := s.inTx(ctx, func(q *dbsqlc.Queries) error {
		if p.TerminalRuns > 0 {
			r, err := q.RunPurge(ctx, t.Add(-p.TerminalRuns))
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
		if p.IdempotencyClaims > 0 {
			n, err := q.IdempotencyPurge(ctx, t.Add(-p.IdempotencyClaims))
			if err != nil {
				return err
			}
			rep.IdempotencyClaims = int(n)
		}
		if p.Instances > 0 {
			n, err := q.InstancePrune(ctx, t.Add(-p.Instances))
			if err != nil {
				return err
			}
			rep.Instances = int(n)
		}
		if p.Audit > 0 {
			n, err := q.AuditPurge(ctx, t.Add(-p.Audit))
			if err != nil {
				return err
			}
			rep.Audit = int(n)
		}
		return nil
	})
	if err != nil {
		return db.PurgeReport{}, fail("purge", err)
	}
	return rep, nil
}
