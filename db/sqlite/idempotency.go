package sqlite

import (
	"context"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

// IdempotencyClaim claims key inside one write transaction: a new key is
// inserted; a held key whose claim expired is taken over by an UPDATE fenced
// on the claim still being expired, so of concurrent takers only the first
// succeeds and the rest see its fresh claim; anything else reads the holder.
func (s *Store) IdempotencyClaim(ctx context.Context, key, fingerprint, runID string, window time.Duration) (db.Claim, error) {
	var claim db.Claim
	err := s.write(ctx, "idempotency claim", func(ctx context.Context, q *dbsqlc.Queries) error {
		t := now()
		n, err := q.IdempotencyInsert(ctx, dbsqlc.IdempotencyInsertParams{
			Key: key, RunID: runID, Fingerprint: fingerprint, Now: micros(t),
		})
		if err != nil {
			return err
		}
		if n == 0 && window > 0 {
			n, err = q.IdempotencyTakeover(ctx, dbsqlc.IdempotencyTakeoverParams{
				Key: key, RunID: runID, Fingerprint: fingerprint, Now: micros(t), ExpiredBefore: micros(t.Add(-window)),
			})
			if err != nil {
				return err
			}
		}
		if n == 1 {
			claim = db.Claim{Outcome: db.ClaimFresh}
			return nil
		}
		held, err := q.IdempotencyGet(ctx, key)
		if err != nil {
			return err
		}
		if held.Fingerprint == fingerprint {
			claim = db.Claim{Outcome: db.ClaimReplay, RunID: held.RunID}
		} else {
			claim = db.Claim{Outcome: db.ClaimConflict}
		}
		return nil
	})
	return claim, err
}

// IdempotencyRelease deletes the claims that point at runID.
func (s *Store) IdempotencyRelease(ctx context.Context, runID string) error {
	return s.writeOne(ctx, "idempotency release", func(ctx context.Context, q *dbsqlc.Queries) error {
		_, err := q.IdempotencyRelease(ctx, runID)
		return err
	})
}
