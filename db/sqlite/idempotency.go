package sqlite

import (
	"context"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

// IdempotencyClaim claims key inside one write transaction: a new key is
// inserted; a held key whose claim expired is taken over by an UPDATE fenced
// on the claim still being expired, so of concurrent takers only the first
// succeeds and the rest see its fresh claim; anything else reads the holder.
func (d *driver) IdempotencyClaim(ctx context.Context, p *db.IdempotencyClaimParams) (db.IdempotencyHolder, error) {
	var h db.IdempotencyHolder
	err := d.write(ctx, func(ctx context.Context, q *dbsqlc.Queries) error {
		now := micros(p.Now)
		n, err := q.IdempotencyInsert(ctx, dbsqlc.IdempotencyInsertParams{Key: p.Key, RunID: p.RunID, Fingerprint: p.Fingerprint, Now: now})
		if err != nil {
			return err
		}
		if n == 0 && p.ExpiredBefore != nil {
			n, err = q.IdempotencyTakeover(ctx, dbsqlc.IdempotencyTakeoverParams{
				Key: p.Key, RunID: p.RunID, Fingerprint: p.Fingerprint, Now: now, ExpiredBefore: micros(*p.ExpiredBefore),
			})
			if err != nil {
				return err
			}
		}
		if n == 1 {
			h = db.IdempotencyHolder{Fresh: true, RunID: p.RunID, Fingerprint: p.Fingerprint}
			return nil
		}
		held, err := q.IdempotencyGet(ctx, p.Key)
		h = db.IdempotencyHolder{RunID: held.RunID, Fingerprint: held.Fingerprint}
		return err
	})
	return h, err
}

func (d *driver) IdempotencyRelease(ctx context.Context, runID string) error {
	return d.writeOne(ctx, func(ctx context.Context, q *dbsqlc.Queries) error {
		_, err := q.IdempotencyRelease(ctx, runID)
		return err
	})
}
