package sqlite

import (
	"context"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

// Purge applies the retention policy in one transaction. The logs of expiring
// runs go first, selected by the same predicate, then the runs, then every
// shard left without its run.
func (s *Store) Purge(ctx context.Context, p db.PurgePolicy) (db.PurgeReport, error) {
	var rep db.PurgeReport
	err := s.write(ctx, "purge", func(ctx context.Context, q *dbsqlc.Queries) error {
		t := now()
		before := func(d time.Duration) int64 { return micros(t.Add(-d)) }
		if p.TerminalRuns > 0 {
			b := before(p.TerminalRuns)
			if _, err := q.RunLogPurgeForRuns(ctx, ptr(b)); err != nil {
				return err
			}
			if _, err := q.RunLogPurgeTruncationsForRuns(ctx, ptr(b)); err != nil {
				return err
			}
			n, err := q.RunPurge(ctx, ptr(b))
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
			keep  time.Duration
			purge func(context.Context, int64) (int64, error)
			count *int
		}{
			{p.IdempotencyClaims, q.IdempotencyPurge, &rep.IdempotencyClaims},
			{p.Instances, q.InstancePrune, &rep.Instances},
			{p.Audit, q.AuditPurge, &rep.Audit},
		} {
			if kind.keep <= 0 {
				continue
			}
			n, err := kind.purge(ctx, before(kind.keep))
			if err != nil {
				return err
			}
			*kind.count = int(n)
		}
		return nil
	})
	return rep, err
}
