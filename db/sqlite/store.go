package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

// orphanError is the error of a run failed by RunRecoverOrphans.
const orphanError = "the instance that owned this run stopped renewing its lease before the run finished"

// poisonError explains why a run or shard was given up on.
func poisonError(what string, maxAttempts int) string {
	return fmt.Sprintf("poison %s: its owner's lease expired again after %d attempts (the cap); not retried", what, maxAttempts)
}

// Store is db.Store over one SQLite database.
type Store struct {
	w, r *sql.DB
	// wc and rc cache the prepared statements of w and r; wq and rq run the
	// queries on them.
	wc, rc *stmtCache
	wq, rq *dbsqlc.Queries
	target *target

	instanceID string
	// owner is instanceID as the nullable owner column's parameter.
	owner    *string
	leaseTTL time.Duration

	closeOnce sync.Once
	closeErr  error
}

var _ db.Store = (*Store)(nil)

// InstanceID is the id this store stamps as owner.
func (s *Store) InstanceID() string { return s.instanceID }

// Dialect reports "sqlite".
func (s *Store) Dialect() string { return dialectName }

// Degraded is false: a Store is always on the database it was opened on. The
// in-memory fallback is a Store too, and db.Open reports that it degraded.
func (s *Store) Degraded() bool { return false }

// Close closes both pools (and frees an in-memory database). Closing twice is
// harmless.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = errors.Join(s.rc.close(), s.wc.close(), s.r.Close(), s.w.Close())
		s.target.release()
	})
	return s.closeErr
}

// Ping checks that both pools reach the database.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.w.PingContext(ctx); err != nil {
		return wrap(ctx, "ping", err)
	}
	return wrap(ctx, "ping", s.r.PingContext(ctx))
}

func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// lease is the lease expiry a write at t stamps.
func (s *Store) lease(t time.Time) *int64 {
	v := micros(t.Add(s.leaseTTL))
	return &v
}

// write runs fn in one write transaction on the writer connection. The driver
// begins it IMMEDIATE, so it holds SQLite's write lock from its first
// statement and every read inside it sees what its writes will build on.
func (s *Store) write(ctx context.Context, op string, fn func(q *dbsqlc.Queries) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return wrap(ctx, op, err)
	}
	stmts := s.wc.inTx(tx)
	defer s.wc.warm(ctx, stmts)
	if err := fn(dbsqlc.New(stmts)); err != nil {
		_ = tx.Rollback()
		return wrap(ctx, op, err)
	}
	return wrap(ctx, op, tx.Commit())
}

// read runs fn in one read-only transaction on the read pool, so several
// reads see one snapshot.
func (s *Store) read(ctx context.Context, op string, fn func(q *dbsqlc.Queries) error) error {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return wrap(ctx, op, err)
	}
	stmts := s.rc.inTx(tx)
	defer s.rc.warm(ctx, stmts)
	defer func() { _ = tx.Rollback() }()
	return wrap(ctx, op, fn(dbsqlc.New(stmts)))
}

// IdempotencyClaim claims key inside one write transaction: a new key is
// inserted; a held key whose claim expired is taken over by an UPDATE fenced
// on the claim still being expired, so of concurrent takers only the first
// succeeds and the rest see its fresh claim; anything else reads the holder.
func (s *Store) IdempotencyClaim(ctx context.Context, key, fingerprint, runID string, window time.Duration) (db.Claim, error) {
	var claim db.Claim
	err := s.write(ctx, "claim idempotency key", func(q *dbsqlc.Queries) error {
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
	_, err := s.wq.IdempotencyRelease(ctx, runID)
	return wrap(ctx, "release idempotency claims", err)
}

// RunUpsert inserts or replaces rec, owned by this instance with a fresh lease.
func (s *Store) RunUpsert(ctx context.Context, rec *db.RunRecord) error {
	r := normalize(rec)
	cols, err := encodeRun(&r)
	if err != nil {
		return wrap(ctx, "upsert run", err)
	}
	err = s.wq.RunUpsert(ctx, dbsqlc.RunUpsertParams{
		RunID:          r.RunID,
		Name:           r.Name,
		Labels:         cols.labels,
		Status:         string(r.Status),
		SubmittedAt:    micros(r.SubmittedAt),
		StartedAt:      microsPtr(r.StartedAt),
		FinishedAt:     microsPtr(r.FinishedAt),
		IdempotencyKey: r.IdempotencyKey,
		Owner:          s.owner,
		LeaseExpiresAt: s.lease(now()),
		Attempt:        int64(r.Attempt),
		RecordsWritten: r.RecordsWritten,
		Error:          r.Error,
		Record:         cols.record,
	})
	return wrap(ctx, "upsert run", err)
}

// RunGet returns one run, or an error wrapping db.ErrNotFound.
func (s *Store) RunGet(ctx context.Context, runID string) (*db.RunRecord, error) {
	row, err := s.rq.RunGet(ctx, runID)
	if err != nil {
		return nil, wrap(ctx, "get run "+runID, err)
	}
	rec, err := decodeRun(row)
	if err != nil {
		return nil, wrap(ctx, "get run "+runID, err)
	}
	return &rec, nil
}

// RunList returns one page of runs, newest first, in one statement: it reads
// one row past the page to know whether another page follows.
func (s *Store) RunList(ctx context.Context, f db.ListFilter) (db.ListPage, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = db.DefaultListLimit
	}
	var statuses *string
	if len(f.Statuses) > 0 {
		b, err := json.Marshal(f.Statuses)
		if err != nil {
			return db.ListPage{}, wrap(ctx, "list runs", err)
		}
		v := string(b)
		statuses = &v
	}
	rows, err := s.rq.RunList(ctx, dbsqlc.RunListParams{
		Statuses: statuses,
		Name:     f.Name,
		Since:    microsPtr(f.Since),
		Until:    microsPtr(f.Until),
		Cursor:   f.Cursor,
		RowLimit: int64(limit) + 1,
	})
	if err != nil {
		return db.ListPage{}, wrap(ctx, "list runs", err)
	}
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	runs, err := decodeRuns(rows)
	if err != nil {
		return db.ListPage{}, wrap(ctx, "list runs", err)
	}
	page := db.ListPage{Runs: runs}
	if more {
		last := runs[len(runs)-1].RunID
		page.NextCursor = &last
	}
	return page, nil
}

// RunDelete deletes a terminal run with its claims, shards and logs in one
// transaction. The delete itself is fenced on a terminal status; only when it
// deletes nothing does the status tell not-found from still-running.
func (s *Store) RunDelete(ctx context.Context, runID string) (db.DeleteOutcome, error) {
	var outcome db.DeleteOutcome
	err := s.write(ctx, "delete run "+runID, func(q *dbsqlc.Queries) error {
		n, err := q.RunDelete(ctx, runID)
		if err != nil {
			return err
		}
		if n == 0 {
			_, err := q.RunStatus(ctx, runID)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				outcome = db.DeleteNotFound
				return nil
			case err != nil:
				return err
			}
			outcome = db.DeleteStillRunning
			return nil
		}
		for _, del := range []func(context.Context, string) (int64, error){
			q.IdempotencyRelease, q.ShardDeleteByRun, q.RunLogDeleteByRun, q.RunLogDeleteTruncationByRun,
		} {
			if _, err := del(ctx, runID); err != nil {
				return err
			}
		}
		outcome = db.Deleted
		return nil
	})
	return outcome, err
}

// RunRenewLeases extends the leases of this instance's queued and running runs.
func (s *Store) RunRenewLeases(ctx context.Context) (int, error) {
	n, err := s.wq.RunRenewLeases(ctx, dbsqlc.RunRenewLeasesParams{LeaseExpiresAt: s.lease(now()), Owner: s.owner})
	return int(n), wrap(ctx, "renew run leases", err)
}

// RunRecoverOrphans fails queued and running runs whose lease expired.
func (s *Store) RunRecoverOrphans(ctx context.Context) (int, error) {
	t := now()
	msg := orphanError
	n, err := s.wq.RunRecoverOrphans(ctx, dbsqlc.RunRecoverOrphansParams{
		Now: ptr(micros(t)), NowText: jsonTime(t), Error: &msg,
	})
	return int(n), wrap(ctx, "recover orphaned runs", err)
}

// RunClaimPending claims up to limit of the oldest pending runs.
func (s *Store) RunClaimPending(ctx context.Context, limit int) ([]db.RunRecord, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.wq.RunClaimPending(ctx, dbsqlc.RunClaimPendingParams{
		Owner: s.owner, LeaseExpiresAt: s.lease(now()), RowLimit: int64(limit),
	})
	if err != nil {
		return nil, wrap(ctx, "claim pending runs", err)
	}
	runs, err := decodeRuns(rows)
	if err != nil {
		return nil, wrap(ctx, "claim pending runs", err)
	}
	// RETURNING yields rows in no promised order.
	slices.SortFunc(runs, func(a, b db.RunRecord) int {
		return cmp.Or(a.SubmittedAt.Compare(b.SubmittedAt), cmp.Compare(a.RunID, b.RunID))
	})
	return runs, nil
}

// RunReclaimOrphans fails the expired running runs that reached the attempt
// cap, then requeues the rest, in one transaction.
func (s *Store) RunReclaimOrphans(ctx context.Context, maxAttempts int) (db.ReclaimReport, error) {
	var rep db.ReclaimReport
	err := s.write(ctx, "reclaim orphaned runs", func(q *dbsqlc.Queries) error {
		t := now()
		poisoned, err := q.RunReclaimPoison(ctx, dbsqlc.RunReclaimPoisonParams{
			Now: ptr(micros(t)), NowText: jsonTime(t), Error: ptr(poisonError("run", maxAttempts)), MaxAttempts: int64(maxAttempts),
		})
		if err != nil {
			return err
		}
		requeued, err := q.RunReclaimRequeue(ctx, dbsqlc.RunReclaimRequeueParams{
			Now: ptr(micros(t)), MaxAttempts: int64(maxAttempts),
		})
		if err != nil {
			return err
		}
		rep = db.ReclaimReport{Requeued: int(requeued), Poisoned: int(poisoned)}
		return nil
	})
	return rep, err
}

// RunFinalizeOwned writes rec while this instance owns the run and it is not
// yet terminal.
func (s *Store) RunFinalizeOwned(ctx context.Context, rec *db.RunRecord) (bool, error) {
	r := normalize(rec)
	if r.Status.Terminal() && r.FinishedAt == nil {
		t := now()
		r.FinishedAt = &t
	}
	cols, err := encodeRun(&r)
	if err != nil {
		return false, wrap(ctx, "finalize run", err)
	}
	n, err := s.wq.RunFinalizeOwned(ctx, dbsqlc.RunFinalizeOwnedParams{
		RunID:          r.RunID,
		Owner:          s.owner,
		Name:           r.Name,
		Labels:         cols.labels,
		Status:         string(r.Status),
		SubmittedAt:    micros(r.SubmittedAt),
		StartedAt:      microsPtr(r.StartedAt),
		FinishedAt:     microsPtr(r.FinishedAt),
		IdempotencyKey: r.IdempotencyKey,
		Attempt:        int64(r.Attempt),
		RecordsWritten: r.RecordsWritten,
		Error:          r.Error,
		Record:         cols.record,
	})
	return n == 1, wrap(ctx, "finalize run "+r.RunID, err)
}

// RunFinalizeShardedParent moves a sharded run to a terminal status.
func (s *Store) RunFinalizeShardedParent(ctx context.Context, runID string, status db.RunStatus, finishedAt time.Time, errMsg *string) (bool, error) {
	if !status.Terminal() {
		return false, permanent("finalize sharded run "+runID, fmt.Errorf("status %q is not terminal", status))
	}
	n, err := s.wq.RunFinalizeShardedParent(ctx, shardedParentParams(runID, status, finishedAt, errMsg))
	return n == 1, wrap(ctx, "finalize sharded run "+runID, err)
}

func shardedParentParams(runID string, status db.RunStatus, finishedAt time.Time, errMsg *string) dbsqlc.RunFinalizeShardedParentParams {
	t := fromMicros(micros(finishedAt))
	return dbsqlc.RunFinalizeShardedParentParams{
		RunID:          runID,
		Status:         string(status),
		FinishedAt:     ptr(micros(t)),
		FinishedAtText: jsonTime(t),
		Error:          errMsg,
	}
}

// RunCancelPending cancels a run that is still pending.
func (s *Store) RunCancelPending(ctx context.Context, runID string) (bool, error) {
	t := now()
	n, err := s.wq.RunCancelPending(ctx, dbsqlc.RunCancelPendingParams{RunID: runID, Now: ptr(micros(t)), NowText: jsonTime(t)})
	return n == 1, wrap(ctx, "cancel pending run "+runID, err)
}

// RunRequestCancel flags a running or sharded run for cancellation and, for a
// sharded run, cancels its shards that have not started.
func (s *Store) RunRequestCancel(ctx context.Context, runID string) (bool, error) {
	var flagged bool
	err := s.write(ctx, "request run cancellation "+runID, func(q *dbsqlc.Queries) error {
		t := ptr(micros(now()))
		status, err := q.RunRequestCancel(ctx, dbsqlc.RunRequestCancelParams{RunID: runID, Now: t})
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		flagged = true
		if db.RunStatus(status) == db.StatusSharded {
			_, err = q.ShardCancelPending(ctx, dbsqlc.ShardCancelPendingParams{RunID: runID, Now: t})
		}
		return err
	})
	return flagged, err
}

// RunPendingCancellations lists this instance's running runs with a cancel
// request.
func (s *Store) RunPendingCancellations(ctx context.Context) ([]string, error) {
	ids, err := s.rq.RunPendingCancellations(ctx, s.owner)
	return ids, wrap(ctx, "list pending run cancellations", err)
}

// InstanceHeartbeat upserts this instance's membership row.
func (s *Store) InstanceHeartbeat(ctx context.Context, hb db.InstanceHeartbeat) error {
	err := s.wq.InstanceHeartbeat(ctx, dbsqlc.InstanceHeartbeatParams{
		InstanceID:    s.instanceID,
		StartedAt:     micros(hb.StartedAt),
		LastHeartbeat: micros(now()),
		Listen:        hb.Listen,
		MaxConcurrent: int64(hb.MaxConcurrent),
		InFlight:      int64(hb.InFlight),
		StateFormat:   int64(hb.StateFormat),
	})
	return wrap(ctx, "heartbeat instance", err)
}

// InstanceListLive lists members heartbeated within ttl.
func (s *Store) InstanceListLive(ctx context.Context, ttl time.Duration) ([]db.InstanceRecord, error) {
	rows, err := s.rq.InstanceListLive(ctx, micros(now().Add(-ttl)))
	if err != nil {
		return nil, wrap(ctx, "list live instances", err)
	}
	out := make([]db.InstanceRecord, len(rows))
	for i, r := range rows {
		out[i] = db.InstanceRecord{
			InstanceID:    r.InstanceID,
			StartedAt:     fromMicros(r.StartedAt),
			LastHeartbeat: fromMicros(r.LastHeartbeat),
			Listen:        r.Listen,
			MaxConcurrent: int(r.MaxConcurrent),
			InFlight:      int(r.InFlight),
			StateFormat:   int(r.StateFormat),
		}
	}
	return out, nil
}

// InstancePrune deletes members not heartbeated within olderThan.
func (s *Store) InstancePrune(ctx context.Context, olderThan time.Duration) (int, error) {
	n, err := s.wq.InstancePrune(ctx, micros(now().Add(-olderThan)))
	return int(n), wrap(ctx, "prune instances", err)
}

// ShardInsert inserts the shards of runID in one statement, keeping those
// already present.
func (s *Store) ShardInsert(ctx context.Context, runID string, shards []db.ShardInsert) (int, error) {
	const op = "shard insert"
	if len(shards) == 0 {
		return 0, nil
	}
	type shard struct {
		ShardID      string          `json:"shard_id"`
		Descriptor   json.RawMessage `json:"descriptor"`
		SizeEstimate *int64          `json:"size_estimate"`
	}
	rows := make([]shard, len(shards))
	for i, sh := range shards {
		rows[i] = shard{ShardID: sh.ShardID, Descriptor: sh.Descriptor, SizeEstimate: sh.SizeEstimate}
		if len(sh.Descriptor) == 0 {
			rows[i].Descriptor = json.RawMessage("null")
		}
	}
	b, err := json.Marshal(rows)
	if err != nil {
		return 0, wrap(ctx, op, fmt.Errorf("encode shards of run %s: %w", runID, err))
	}
	n, err := s.wq.ShardInsert(ctx, dbsqlc.ShardInsertParams{RunID: runID, Shards: string(b)})
	return int(n), wrap(ctx, op, err)
}

// ShardClaim claims up to limit pending shards in one statement, then reads
// their parent runs in the same transaction.
func (s *Store) ShardClaim(ctx context.Context, limit int) ([]db.ClaimedShard, error) {
	if limit <= 0 {
		return nil, nil
	}
	var claimed []db.ClaimedShard
	err := s.write(ctx, "claim shards", func(q *dbsqlc.Queries) error {
		rows, err := q.ShardClaim(ctx, dbsqlc.ShardClaimParams{
			Owner: s.owner, LeaseExpiresAt: s.lease(now()), RowLimit: int64(limit),
		})
		if err != nil || len(rows) == 0 {
			return err
		}
		// RETURNING yields rows in no promised order.
		slices.SortFunc(rows, func(a, b dbsqlc.ShardClaimRow) int {
			return cmp.Or(compareSizeDesc(a.SizeEstimate, b.SizeEstimate), cmp.Compare(a.RunID, b.RunID), cmp.Compare(a.ShardID, b.ShardID))
		})
		ids := make([]string, 0, len(rows))
		for _, r := range rows {
			ids = append(ids, r.RunID)
		}
		idsJSON, err := json.Marshal(slices.Compact(slices.Sorted(slices.Values(ids))))
		if err != nil {
			return err
		}
		parents, err := q.RunGetMany(ctx, string(idsJSON))
		if err != nil {
			return err
		}
		runs := make(map[string]db.RunRecord, len(parents))
		for _, p := range parents {
			rec, err := decodeRun(p)
			if err != nil {
				return err
			}
			runs[rec.RunID] = rec
		}
		claimed = make([]db.ClaimedShard, len(rows))
		for i, r := range rows {
			claimed[i] = db.ClaimedShard{
				RunID:      r.RunID,
				ShardID:    r.ShardID,
				Descriptor: json.RawMessage(r.Descriptor),
				Attempt:    int(r.Attempt),
				Run:        runs[r.RunID],
			}
		}
		return nil
	})
	return claimed, err
}

// compareSizeDesc orders size estimates largest first, unknown last.
func compareSizeDesc(a, b *int64) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return cmp.Compare(*b, *a)
}

// ShardRenewLeases extends the leases of this instance's running shards.
func (s *Store) ShardRenewLeases(ctx context.Context) (int, error) {
	n, err := s.wq.ShardRenewLeases(ctx, dbsqlc.ShardRenewLeasesParams{LeaseExpiresAt: s.lease(now()), Owner: s.owner})
	return int(n), wrap(ctx, "renew shard leases", err)
}

// ShardReclaimOrphans fails the expired running shards that reached the
// attempt cap, then requeues the rest, in one transaction.
func (s *Store) ShardReclaimOrphans(ctx context.Context, maxAttempts int) (db.ReclaimReport, error) {
	var rep db.ReclaimReport
	err := s.write(ctx, "reclaim orphaned shards", func(q *dbsqlc.Queries) error {
		t := ptr(micros(now()))
		poisoned, err := q.ShardReclaimPoison(ctx, dbsqlc.ShardReclaimPoisonParams{
			Now: t, Error: ptr(poisonError("shard", maxAttempts)), MaxAttempts: int64(maxAttempts),
		})
		if err != nil {
			return err
		}
		requeued, err := q.ShardReclaimRequeue(ctx, dbsqlc.ShardReclaimRequeueParams{Now: t, MaxAttempts: int64(maxAttempts)})
		if err != nil {
			return err
		}
		rep = db.ReclaimReport{Requeued: int(requeued), Poisoned: int(poisoned)}
		return nil
	})
	return rep, err
}

// ShardFinalize writes a shard's terminal result while this instance owns it.
func (s *Store) ShardFinalize(ctx context.Context, runID, shardID string, res db.ShardResult) (bool, error) {
	op := "finalize shard " + runID + "/" + shardID
	if !res.Status.Terminal() {
		return false, permanent(op, fmt.Errorf("status %q is not terminal", res.Status))
	}
	n, err := s.wq.ShardFinalize(ctx, dbsqlc.ShardFinalizeParams{
		RunID:          runID,
		ShardID:        shardID,
		Owner:          s.owner,
		Status:         string(res.Status),
		RecordsWritten: res.RecordsWritten,
		Error:          res.Error,
		Now:            ptr(micros(now())),
	})
	return n == 1, wrap(ctx, op, err)
}

// ShardProgress counts the shards of runID by state.
func (s *Store) ShardProgress(ctx context.Context, runID string) (db.ShardProgress, error) {
	p, err := s.rq.ShardProgress(ctx, runID)
	if err != nil {
		return db.ShardProgress{}, wrap(ctx, "shard progress of run "+runID, err)
	}
	return db.ShardProgress{
		Total:          int(p.Total),
		Pending:        int(p.Pending),
		Running:        int(p.Running),
		Completed:      int(p.Completed),
		Failed:         int(p.Failed),
		Cancelled:      int(p.Cancelled),
		RecordsWritten: p.RecordsWritten,
	}, nil
}

// ShardPendingCancellations lists the runs with a cancel request for which
// this instance runs a shard.
func (s *Store) ShardPendingCancellations(ctx context.Context) ([]string, error) {
	ids, err := s.rq.ShardPendingCancellations(ctx, s.owner)
	return ids, wrap(ctx, "list pending shard cancellations", err)
}

// ShardFinalizeCompletedParents finalizes the sharded runs whose shards are
// all terminal. It runs in one write transaction, so no shard changes between
// the count and the status-fenced finalize of each parent.
func (s *Store) ShardFinalizeCompletedParents(ctx context.Context) ([]string, error) {
	var done []string
	err := s.write(ctx, "finalize completed sharded runs", func(q *dbsqlc.Queries) error {
		parents, err := q.ShardCompletedParents(ctx)
		if err != nil {
			return err
		}
		t := now()
		for _, p := range parents {
			status, errMsg := db.StatusCompleted, (*string)(nil)
			switch {
			case p.Failed > 0:
				status = db.StatusFailed
				errMsg = ptr(fmt.Sprintf("%d/%d shard(s) failed", p.Failed, p.Total))
			case p.Cancelled > 0:
				status = db.StatusCancelled
			}
			n, err := q.RunFinalizeShardedParent(ctx, shardedParentParams(p.RunID, status, t, errMsg))
			if err != nil {
				return err
			}
			if n == 1 {
				done = append(done, p.RunID)
			}
		}
		return nil
	})
	return done, err
}

// AuditInsert appends one audit entry.
func (s *Store) AuditInsert(ctx context.Context, e db.AuditEntry) error {
	err := s.wq.AuditInsert(ctx, dbsqlc.AuditInsertParams{
		ID:                e.ID,
		Ts:                micros(e.Timestamp),
		Principal:         e.Principal,
		Role:              e.Role,
		Action:            e.Action,
		RunID:             e.RunID,
		ConfigFingerprint: e.ConfigFingerprint,
		SourceIp:          e.SourceIP,
		Result:            e.Result,
	})
	return wrap(ctx, "insert audit entry", err)
}

// AuditList returns matching audit entries, newest first.
func (s *Store) AuditList(ctx context.Context, f db.AuditFilter) ([]db.AuditEntry, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = db.DefaultAuditLimit
	}
	rows, err := s.rq.AuditList(ctx, dbsqlc.AuditListParams{
		Principal: f.Principal,
		Action:    f.Action,
		Since:     microsPtr(f.Since),
		Until:     microsPtr(f.Until),
		RowLimit:  int64(limit),
	})
	if err != nil {
		return nil, wrap(ctx, "list audit entries", err)
	}
	out := make([]db.AuditEntry, len(rows))
	for i, r := range rows {
		out[i] = db.AuditEntry{
			ID:                r.ID,
			Timestamp:         fromMicros(r.Ts),
			Principal:         r.Principal,
			Role:              r.Role,
			Action:            r.Action,
			RunID:             r.RunID,
			ConfigFingerprint: r.ConfigFingerprint,
			SourceIP:          r.SourceIp,
			Result:            r.Result,
		}
	}
	return out, nil
}

// RunLogAppend stores a batch of log lines and applies the per-run cap, in
// one transaction.
func (s *Store) RunLogAppend(ctx context.Context, runID string, lines []db.RunLogLine, maxLinesPerRun int) error {
	const op = "run log append"
	if len(lines) == 0 {
		return nil
	}
	type line struct {
		Seq   int64  `json:"seq"`
		TS    int64  `json:"ts"`
		Level string `json:"level"`
		Line  string `json:"line"`
	}
	rows := make([]line, len(lines))
	for i, l := range lines {
		rows[i] = line{Seq: l.Seq, TS: micros(l.TS), Level: l.Level, Line: l.Line}
	}
	b, err := json.Marshal(rows)
	if err != nil {
		return wrap(ctx, op, fmt.Errorf("encode log lines of run %s: %w", runID, err))
	}
	return s.write(ctx, op, func(q *dbsqlc.Queries) error {
		if _, err := q.RunLogInsert(ctx, dbsqlc.RunLogInsertParams{RunID: runID, Lines: string(b)}); err != nil {
			return err
		}
		if maxLinesPerRun <= 0 {
			return nil
		}
		dropped, err := q.RunLogTrim(ctx, dbsqlc.RunLogTrimParams{RunID: runID, KeepOffset: int64(maxLinesPerRun) - 1})
		if err != nil || dropped == 0 {
			return err
		}
		return q.RunLogMarkTruncated(ctx, dbsqlc.RunLogMarkTruncatedParams{RunID: runID, Now: micros(now())})
	})
}

// RunLogList returns a page of a run's log lines, oldest first, with its
// truncation mark, from one snapshot.
func (s *Store) RunLogList(ctx context.Context, runID string, after int64, limit int) (db.RunLogPage, error) {
	if limit <= 0 {
		limit = db.DefaultRunLogLimit
	}
	var page db.RunLogPage
	err := s.read(ctx, "list logs of run "+runID, func(q *dbsqlc.Queries) error {
		rows, err := q.RunLogList(ctx, dbsqlc.RunLogListParams{RunID: runID, AfterSeq: after, RowLimit: int64(limit)})
		if err != nil {
			return err
		}
		page.Lines = make([]db.RunLogLine, len(rows))
		for i, r := range rows {
			page.Lines[i] = db.RunLogLine{Seq: r.Seq, TS: fromMicros(r.Ts), Level: r.Level, Line: r.Line}
		}
		page.Truncated, err = q.RunLogTruncated(ctx, runID)
		return err
	})
	return page, err
}

// RunLogPurge deletes log lines older than olderThan and the truncation marks
// of runs left without lines.
func (s *Store) RunLogPurge(ctx context.Context, olderThan time.Duration) (int, error) {
	var purged int64
	err := s.write(ctx, "purge run logs", func(q *dbsqlc.Queries) error {
		var err error
		if purged, err = q.RunLogPurge(ctx, micros(now().Add(-olderThan))); err != nil {
			return err
		}
		_, err = q.RunLogPurgeTruncations(ctx)
		return err
	})
	return int(purged), err
}

// Purge applies the retention policy in one transaction. The logs of expiring
// runs go first, selected by the same predicate, then the runs, then every
// shard left without its run.
func (s *Store) Purge(ctx context.Context, p db.PurgePolicy) (db.PurgeReport, error) {
	var rep db.PurgeReport
	err := s.write(ctx, "purge history", func(q *dbsqlc.Queries) error {
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
		if p.IdempotencyClaims > 0 {
			n, err := q.IdempotencyPurge(ctx, before(p.IdempotencyClaims))
			if err != nil {
				return err
			}
			rep.IdempotencyClaims = int(n)
		}
		if p.Instances > 0 {
			n, err := q.InstancePrune(ctx, before(p.Instances))
			if err != nil {
				return err
			}
			rep.Instances = int(n)
		}
		if p.Audit > 0 {
			n, err := q.AuditPurge(ctx, before(p.Audit))
			if err != nil {
				return err
			}
			rep.Audit = int(n)
		}
		return nil
	})
	return rep, err
}

func ptr[T any](v T) *T { return &v }
