package db

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// CallbackState is where the delivery of a run's completion callback stands.
type CallbackState string

// The states of a delivery. A delivery is written pending, in the
// transaction that made its run terminal, and ends delivered or failed.
const (
	CallbackPending   CallbackState = "pending"
	CallbackDelivered CallbackState = "delivered"
	CallbackFailed    CallbackState = "failed"
)

// exhaustedError fails a delivery whose last attempt never reported back.
const exhaustedError = "no attempts left: the process making the last attempt stopped before the target answered"

// CallbackDelivery is one row of the callback outbox: the delivery of a
// run's completion callback and how its attempts went.
type CallbackDelivery struct {
	// DeliveryID is random, stable across attempts and processes: the
	// Faucet-Delivery-Id a receiver dedupes on.
	DeliveryID string
	RunID      string
	State      CallbackState
	// CreatedAt is the run's finish, when the row was written with it.
	CreatedAt time.Time
	// NextAttemptAt is when a pending delivery is due; nil once it ended.
	NextAttemptAt *time.Time
	// Attempts counts the attempts started, the one in flight included.
	Attempts       int
	LastAttemptAt  *time.Time
	LastStatusCode *int
	LastError      *string
	// FinishedAt is when it was delivered or failed.
	FinishedAt *time.Time
}

// ClaimedCallback is a delivery claimed for an attempt, with its run.
type ClaimedCallback struct {
	Delivery CallbackDelivery
	Run      RunRecord
}

// CallbackClaims is what one CallbackClaim did.
type CallbackClaims struct {
	// Claimed are the deliveries to attempt now, oldest due first.
	Claimed []ClaimedCallback
	// Exhausted counts the deliveries failed because their last attempt's
	// claim lapsed with no attempt left.
	Exhausted int
}

// CallbackResult is the outcome of one attempt, for CallbackSettle.
type CallbackResult struct {
	DeliveryID string
	// Attempt is the claimed delivery's Attempts: the settle is fenced on
	// this process still holding that claim.
	Attempt int
	// State is CallbackDelivered, CallbackFailed, or CallbackPending for a
	// retry at RetryAt.
	State      CallbackState
	RetryAt    time.Time
	StatusCode *int
	Error      *string
}

// CallbackStore owns the outbox of completion callbacks. Its rows are not
// written through it: the database writes a pending delivery in the same
// transaction as every terminal transition of a run whose callback
// subscribes to that state, whichever statement made it (see the migration
// of the outbox), so no terminal run lacks its delivery and none has two.
// Deliveries are deleted with their run.
type CallbackStore interface {
	// CallbackClaim fails the pending deliveries whose last claim lapsed
	// with maxAttempts used, then claims up to limit due deliveries nobody
	// holds with attempts left, for this instance, for lease, counting an
	// attempt each. A delivery is returned to one caller at a time across
	// all processes; one whose claim lapsed is claimable again.
	CallbackClaim(ctx context.Context, limit int, lease time.Duration, maxAttempts int) (CallbackClaims, error)
	// CallbackSettle records an attempt's outcome while this instance holds
	// the claim r.Attempt made; false when it lost it (the lease lapsed and
	// another process claimed the delivery again, or it ended meanwhile).
	CallbackSettle(ctx context.Context, r CallbackResult) (bool, error)
	// CallbackList returns a run's deliveries, oldest first.
	CallbackList(ctx context.Context, runID string) ([]CallbackDelivery, error)
	// CallbackRelease gives back every claim, whoever holds it, so the
	// deliveries are claimable at once. Only a process that knows it is the
	// history's sole user may call it, as RunFailUnfinished.
	CallbackRelease(ctx context.Context) (int, error)
}

// CallbackDriver stores the callback outbox.
type CallbackDriver interface {
	// CallbackClaim fails the exhausted deliveries (p.MaxAttempts used,
	// lease lapsed at p.Now) with p.ExhaustedError, then claims up to
	// p.Limit due ones for p.Owner, in no particular order, exclusively, in
	// one transaction.
	CallbackClaim(ctx context.Context, p *CallbackClaimParams) (CallbackClaimResult, error)
	// CallbackSettle writes an attempt's outcome fenced on p.Owner holding
	// the claim of attempt p.Result.Attempt.
	CallbackSettle(ctx context.Context, p *CallbackSettleParams) (bool, error)
	// CallbackListRun returns a run's deliveries, oldest first.
	CallbackListRun(ctx context.Context, runID string) ([]CallbackDelivery, error)
	// CallbackRelease clears the claims of every pending delivery.
	CallbackRelease(ctx context.Context) (int, error)
}

// CallbackClaimParams are the arguments of CallbackDriver.CallbackClaim.
type CallbackClaimParams struct {
	Owner               string
	Now, LeaseExpiresAt time.Time
	MaxAttempts, Limit  int
	ExhaustedError      string
}

// CallbackClaimResult is what CallbackDriver.CallbackClaim returns.
type CallbackClaimResult struct {
	Exhausted int
	Claimed   []CallbackClaimRow
}

// CallbackClaimRow is a claimed delivery with its run's row.
type CallbackClaimRow struct {
	Delivery CallbackDelivery
	Run      RunRow
}

// CallbackSettleParams are the arguments of CallbackDriver.CallbackSettle.
type CallbackSettleParams struct {
	Owner  string
	Result CallbackResult
	// Now is the finish of a delivery that ended.
	Now time.Time
}

func (s *store) CallbackClaim(ctx context.Context, limit int, lease time.Duration, maxAttempts int) (CallbackClaims, error) {
	const op = "callback claim"
	if maxAttempts < 1 {
		return CallbackClaims{}, invalid(op, fmt.Errorf("max attempts %d: at least 1", maxAttempts))
	}
	now := s.now()
	res, err := s.d.CallbackClaim(ctx, &CallbackClaimParams{
		Owner: s.instanceID, Now: now, LeaseExpiresAt: micro(now.Add(lease)),
		MaxAttempts: maxAttempts, Limit: max(limit, 0), ExhaustedError: exhaustedError,
	})
	if err != nil {
		return CallbackClaims{}, fail(ctx, op, err)
	}
	out := CallbackClaims{Exhausted: res.Exhausted, Claimed: make([]ClaimedCallback, len(res.Claimed))}
	for i, r := range res.Claimed {
		run, err := decodeRun(r.Run)
		if err != nil {
			return CallbackClaims{}, fail(ctx, op, err)
		}
		out.Claimed[i] = ClaimedCallback{Delivery: r.Delivery, Run: run}
	}
	slices.SortFunc(out.Claimed, func(a, b ClaimedCallback) int {
		// A claimed delivery is pending, so it has its due time.
		return cmp.Or(a.Delivery.NextAttemptAt.Compare(*b.Delivery.NextAttemptAt), cmp.Compare(a.Delivery.DeliveryID, b.Delivery.DeliveryID))
	})
	return out, nil
}

func (s *store) CallbackSettle(ctx context.Context, r CallbackResult) (bool, error) {
	const op = "callback settle"
	switch r.State {
	case CallbackDelivered, CallbackFailed:
	case CallbackPending:
		r.RetryAt = micro(r.RetryAt)
	default:
		return false, invalid(op, fmt.Errorf("delivery %s: unknown state %q", r.DeliveryID, r.State))
	}
	ok, err := s.d.CallbackSettle(ctx, &CallbackSettleParams{Owner: s.instanceID, Result: r, Now: s.now()})
	return failed(ctx, op, ok, err)
}

func (s *store) CallbackList(ctx context.Context, runID string) ([]CallbackDelivery, error) {
	ds, err := s.d.CallbackListRun(ctx, runID)
	return failed(ctx, "callback list", ds, err)
}

func (s *store) CallbackRelease(ctx context.Context) (int, error) {
	n, err := s.d.CallbackRelease(ctx)
	return failed(ctx, "callback release", n, err)
}
