package sqlite

import (
	"context"
	"encoding/json"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

// CallbackClaim fails the exhausted deliveries, claims the due ones and
// reads their runs, in one transaction.
func (d *driver) CallbackClaim(ctx context.Context, p *db.CallbackClaimParams) (db.CallbackClaimResult, error) {
	var res db.CallbackClaimResult
	err := d.write(ctx, func(ctx context.Context, q *dbsqlc.Queries) error {
		n, err := q.CallbackExhaust(ctx, dbsqlc.CallbackExhaustParams{Error: &p.ExhaustedError, Now: ptr(micros(p.Now)), MaxAttempts: int64(p.MaxAttempts)})
		if err != nil {
			return err
		}
		res = db.CallbackClaimResult{Exhausted: int(n)}
		if p.Limit == 0 {
			return nil
		}
		rows, err := q.CallbackClaim(ctx, dbsqlc.CallbackClaimParams{
			Owner: &p.Owner, LeaseExpiresAt: ptr(micros(p.LeaseExpiresAt)), Now: ptr(micros(p.Now)),
			MaxAttempts: int64(p.MaxAttempts), RowLimit: int64(p.Limit),
		})
		if err != nil || len(rows) == 0 {
			return err
		}
		ids := make([]string, len(rows))
		for i, r := range rows {
			ids[i] = r.RunID
		}
		idsJSON, err := json.Marshal(ids)
		if err != nil {
			return err
		}
		found, err := q.RunGetMany(ctx, string(idsJSON))
		if err != nil {
			return err
		}
		runs := make(map[string]db.RunRow, len(found))
		for _, r := range found {
			runs[r.RunID] = runRow(r)
		}
		res.Claimed = make([]db.CallbackClaimRow, len(rows))
		for i, r := range rows {
			// A delivery's run exists while it does: the row is deleted
			// with its run.
			res.Claimed[i] = db.CallbackClaimRow{Delivery: delivery(r), Run: runs[r.RunID]}
		}
		return nil
	})
	if err != nil {
		return db.CallbackClaimResult{}, err
	}
	return res, nil
}

func (d *driver) CallbackSettle(ctx context.Context, p *db.CallbackSettleParams) (bool, error) {
	r := p.Result
	arg := dbsqlc.CallbackSettleParams{
		State: string(r.State), NextAttemptAt: micros(p.Now), StatusCode: int64Ptr(r.StatusCode), Error: r.Error,
		DeliveryID: r.DeliveryID, Owner: &p.Owner, Attempt: int64(r.Attempt),
	}
	if r.State == db.CallbackPending {
		arg.NextAttemptAt = micros(r.RetryAt)
	} else {
		arg.FinishedAt = ptr(micros(p.Now))
	}
	return one(writeValue(ctx, d, func(ctx context.Context, q *dbsqlc.Queries) (int64, error) { return q.CallbackSettle(ctx, arg) }))
}

func (d *driver) CallbackListRun(ctx context.Context, runID string) ([]db.CallbackDelivery, error) {
	rows, err := d.rq.CallbackListRun(ctx, runID)
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]db.CallbackDelivery, len(rows))
	for i, r := range rows {
		out[i] = delivery(r)
	}
	return out, nil
}

func (d *driver) CallbackRelease(ctx context.Context) (int, error) {
	return count(writeValue(ctx, d, func(ctx context.Context, q *dbsqlc.Queries) (int64, error) { return q.CallbackRelease(ctx) }))
}

// delivery converts an outbox row; only a pending delivery has a due time.
func delivery(r dbsqlc.FaucetCallbackDelivery) db.CallbackDelivery {
	out := db.CallbackDelivery{
		DeliveryID: r.DeliveryID, RunID: r.RunID, State: db.CallbackState(r.State), CreatedAt: fromMicros(r.CreatedAt),
		Attempts: int(r.Attempts), LastAttemptAt: fromMicrosPtr(r.LastAttemptAt), LastStatusCode: intPtr(r.LastStatusCode),
		LastError: r.LastError, FinishedAt: fromMicrosPtr(r.FinishedAt),
	}
	if out.State == db.CallbackPending {
		out.NextAttemptAt = ptr(fromMicros(r.NextAttemptAt))
	}
	return out
}
