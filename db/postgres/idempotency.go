package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
)

// claimAttempts bounds the retries of a claim whose snapshot was overtaken by
// a concurrent claim, takeover or release of the same key.
const claimAttempts = 8

var errClaimRace = errors.New("the key kept changing hands during the claim")

// IdempotencyClaim claims in one statement, retried while its snapshot
// predates a concurrent claim of the key: the statement then sees no row,
// or an expired claim someone else just took over.
func (d *driver) IdempotencyClaim(ctx context.Context, p *db.IdempotencyClaimParams) (db.IdempotencyHolder, error) {
	for range claimAttempts {
		row, err := d.q.IdempotencyClaim(ctx, dbsqlc.IdempotencyClaimParams{
			Key: p.Key, RunID: p.RunID, Fingerprint: p.Fingerprint, Now: p.Now, ExpiredBefore: p.ExpiredBefore,
		})
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return db.IdempotencyHolder{}, interpretError(err)
		}
		if !row.Fresh && p.ExpiredBefore != nil && row.ClaimedAt.Before(*p.ExpiredBefore) {
			continue
		}
		return db.IdempotencyHolder{Fresh: row.Fresh, RunID: row.RunID, Fingerprint: row.Fingerprint}, nil
	}
	return db.IdempotencyHolder{}, &db.Error{Transience: db.Transient, Err: errClaimRace}
}

func (d *driver) IdempotencyRelease(ctx context.Context, runID string) error {
	return interpretError(d.q.IdempotencyRelease(ctx, runID))
}
