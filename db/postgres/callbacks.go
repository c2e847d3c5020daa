package postgres

import (
	"context"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
)

// CallbackClaim fails the exhausted deliveries and claims the due ones in
// one transaction, each claimed delivery read with its run by the claim
// itself.
func (d *driver) CallbackClaim(ctx context.Context, p *db.CallbackClaimParams) (db.CallbackClaimResult, error) {
	var res db.CallbackClaimResult
	err := d.inTx(ctx, func(q *dbsqlc.Queries) error {
		n, err := q.CallbackExhaust(ctx, dbsqlc.CallbackExhaustParams{Error: p.ExhaustedError, Now: p.Now, MaxAttempts: int32(p.MaxAttempts)})
		if err != nil {
			return err
		}
		res = db.CallbackClaimResult{Exhausted: int(n)}
		if p.Limit == 0 {
			return nil
		}
		rows, err := q.CallbackClaim(ctx, dbsqlc.CallbackClaimParams{
			Owner: p.Owner, LeaseExpiresAt: p.LeaseExpiresAt, Now: p.Now, MaxAttempts: int32(p.MaxAttempts), ClaimLimit: int32(p.Limit),
		})
		if err != nil {
			return err
		}
		res.Claimed = make([]db.CallbackClaimRow, len(rows))
		for i, r := range rows {
			res.Claimed[i] = db.CallbackClaimRow{
				Delivery: delivery(dbsqlc.FaucetCallbackDelivery{
					DeliveryID: r.DeliveryID, RunID: r.RunID, State: r.State, CreatedAt: r.CreatedAt,
					NextAttemptAt: r.NextAttemptAt, Attempts: r.Attempts, LastAttemptAt: r.LastAttemptAt,
					LastStatusCode: r.LastStatusCode, LastError: r.LastError, FinishedAt: r.FinishedAt,
				}),
				Run: runRow(dbsqlc.FaucetRun{
					RunID: r.RunID, Name: r.Name, Labels: r.Labels, Status: r.Status,
					SubmittedAt: r.SubmittedAt, StartedAt: r.StartedAt, FinishedAt: r.RunFinishedAt,
					IdempotencyKey: r.IdempotencyKey, Attempt: r.Attempt, RecordsWritten: r.RecordsWritten,
					Error: r.Error, Submission: r.Submission, Invocations: r.Invocations,
					TemplateID: r.TemplateID, TemplateVersion: r.TemplateVersion,
				}),
			}
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
		State: string(r.State), NextAttemptAt: p.Now, StatusCode: int32Ptr(r.StatusCode), Error: r.Error,
		DeliveryID: r.DeliveryID, Owner: p.Owner, Attempt: int32(r.Attempt),
	}
	if r.State == db.CallbackPending {
		arg.NextAttemptAt = r.RetryAt
	} else {
		arg.FinishedAt = &p.Now
	}
	return one(d.q.CallbackSettle(ctx, arg))
}

func (d *driver) CallbackListRun(ctx context.Context, runID string) ([]db.CallbackDelivery, error) {
	rows, err := d.q.CallbackListRun(ctx, runID)
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
	return count(d.q.CallbackRelease(ctx))
}

// delivery converts an outbox row; only a pending delivery has a due time.
func delivery(r dbsqlc.FaucetCallbackDelivery) db.CallbackDelivery {
	out := db.CallbackDelivery{
		DeliveryID: r.DeliveryID, RunID: r.RunID, State: db.CallbackState(r.State), CreatedAt: r.CreatedAt.UTC(),
		Attempts: int(r.Attempts), LastAttemptAt: utc(r.LastAttemptAt), LastStatusCode: intPtr(r.LastStatusCode),
		LastError: r.LastError, FinishedAt: utc(r.FinishedAt),
	}
	if out.State == db.CallbackPending {
		due := r.NextAttemptAt.UTC()
		out.NextAttemptAt = &due
	}
	return out
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.UTC()
	return &v
}
