// Package db is faucet's data-access layer: the run-history Store, its domain
// types and errors. The dialect packages (db/postgres, db/sqlite) implement the
// Store over sqlc-generated queries; everything else in faucet sees only this
// package.
package db

import (
	"context"
	"time"
)

// Store keeps faucet's run history. Every method is safe for concurrent use,
// and every fence it documents is enforced by the database (a WHERE clause or a
// transaction), so several processes sharing one database stay correct.
//
// Ownership: a store has an instance id. RunUpsert stamps that id as the run's
// owner with a lease of LeaseTTL; heartbeats renew the leases of the runs and
// shards this instance owns; peers reclaim runs whose lease expired.
//
// Time: every timestamp is truncated to microseconds before it is stored and
// comes back in UTC, so a record reads back equal on every dialect. Methods
// that return lists return them in a documented, deterministic order.
type Store interface {
	// InstanceID is the id this store stamps as owner.
	InstanceID() string
	// Dialect names the backing database: "postgres" or "sqlite".
	Dialect() string
	// Close releases the connections.
	Close() error
	// Ping checks that the database answers (readiness probes).
	Ping(ctx context.Context) error

	// IdempotencyClaim atomically claims key for runID. A held key yields
	// ClaimReplay when fingerprint matches and ClaimConflict otherwise. A claim
	// older than window is expired: it is taken over (ClaimFresh) only by the
	// caller that still observes its claimed_at, so concurrent takeovers have a
	// single winner. A window <= 0 means claims never expire.
	//
	// The takeover is one conditional write judged against the claim as it
	// is when written (claimed_at older than now minus the caller's window),
	// never against an earlier read: a caller that saw the old claim and lost
	// the race judges the winner's claim, which is fresh, and replays it.
	// Expiry is each caller's own judgement, though, so every member sharing
	// a database must pass the same window: a member with a shorter window
	// treats a claim as expired that the others still honour, and takes it
	// over legitimately by its rule, giving the key a second run.
	IdempotencyClaim(ctx context.Context, key, fingerprint, runID string, window time.Duration) (Claim, error)
	// IdempotencyRelease deletes the claims that point at runID (used when the
	// record write after a fresh claim failed). A newer run that re-claimed the
	// key keeps its claim.
	IdempotencyRelease(ctx context.Context, runID string) error

	// RunUpsert inserts or replaces a run record, stamping this instance as
	// owner with a fresh lease. It never touches cancel_requested.
	RunUpsert(ctx context.Context, rec *RunRecord) error
	// RunSubmit writes a new run like RunUpsert and, when audit is not nil,
	// appends the audit entry of its submission in the same transaction, so
	// an accepted run and its audit trail are one write.
	RunSubmit(ctx context.Context, rec *RunRecord, audit *AuditEntry) error
	// RunStart moves a queued run this instance owns to running with the
	// given start time and a fresh lease. It returns false when the run is
	// not queued or another instance owns it.
	RunStart(ctx context.Context, runID string, startedAt time.Time) (bool, error)
	// RunFinish writes a run's terminal record together with the log lines
	// it has not persisted yet (applying the per-run cap as RunLogAppend
	// does), in one write, so a reader that sees the run finished reads
	// every line. With f.Owned the record is fenced like RunFinalizeOwned
	// and false means it was not written: another instance reclaimed the
	// run, a finalizer already won, or the run does not exist (the lines are
	// kept either way). Otherwise it is upserted like RunUpsert and the
	// result is always true.
	RunFinish(ctx context.Context, f RunFinal) (bool, error)
	// RunGet returns one run, or ErrNotFound.
	RunGet(ctx context.Context, runID string) (*RunRecord, error)
	// RunList returns one page of runs, newest first (keyset pagination on
	// (submitted_at, run_id)). Since and Until are inclusive; a Limit <= 0
	// means DefaultListLimit. A cursor that names no run is ErrUnknownCursor,
	// so a client whose cursor went stale learns it instead of reading the
	// first page again as if it were the next.
	RunList(ctx context.Context, f ListFilter) (ListPage, error)
	// RunDelete deletes a terminal run together with its idempotency claims,
	// shards and logs, in one transaction.
	RunDelete(ctx context.Context, runID string) (DeleteOutcome, error)

	// RunRenewLeases extends the lease of this instance's non-terminal runs and
	// returns how many it renewed.
	RunRenewLeases(ctx context.Context) (int, error)
	// RunRecoverOrphans fails queued or running runs whose lease expired (their
	// owner is presumed dead), never a run with a live lease, and returns how
	// many it failed.
	RunRecoverOrphans(ctx context.Context) (int, error)
	// RunClaimPending moves up to limit of the oldest pending runs to running,
	// started now, owned by this instance with a fresh lease, and returns
	// them oldest first
	// (submitted_at, then run_id). A run is returned to exactly one caller
	// across all processes.
	RunClaimPending(ctx context.Context, limit int) ([]RunRecord, error)
	// RunReclaimOrphans requeues running runs whose lease expired (pending,
	// owner cleared, attempt+1; a cancel request survives) or, once attempt has
	// reached maxAttempts, fails them as poison with an error naming the
	// attempt and requeue count (PoisonErrorFormat), keeping their attempt
	// count. maxAttempts caps requeues, so a run whose lease keeps lapsing is
	// executed maxAttempts+1 times; a RunRelease also counts as a requeue.
	RunReclaimOrphans(ctx context.Context, maxAttempts int) (ReclaimReport, error)
	// RunRelease puts a running run this instance owns back to pending, owner
	// cleared and attempt+1, for a peer to claim at once: a member that shuts
	// down hands its runs over instead of failing them. It returns false
	// when this instance no longer owns the run or it is not running.
	RunRelease(ctx context.Context, runID string) (bool, error)
	// RunFinalizeOwned writes a terminal record only while this instance owns
	// the run and it is not yet terminal; it returns false when another
	// instance reclaimed it or a finalizer already won. It stamps FinishedAt
	// when missing.
	RunFinalizeOwned(ctx context.Context, rec *RunRecord) (bool, error)
	// RunShard turns a running run this instance owns into a sharded run
	// and inserts its shard set (conflicts on (run, shard) ignored), in one
	// transaction: no shard row ever exists while its parent is running, and
	// no sharded parent is left without its shards. A run that carries a
	// cancel request gets its shards inserted cancelled, since no claimer
	// takes them. Repeating the call for a
	// run this instance already sharded inserts the missing shards and
	// returns true; it returns false, inserting nothing, when the run is in
	// any other state or another instance owns it.
	RunShard(ctx context.Context, runID string, shards []ShardInsert) (bool, error)
	// RunSetProgress records the records written so far by running runs
	// this instance owns (run id → count), so peers read live counts, and
	// returns how many runs it updated.
	RunSetProgress(ctx context.Context, progress map[string]int64) (int, error)
	// RunFinalizeShardedParent moves a sharded run to the terminal status,
	// fenced on status sharded; it never re-arms owner or lease. The parent's
	// records_written becomes the sum of its shards'. The first caller wins. A
	// non-terminal status is an error.
	RunFinalizeShardedParent(ctx context.Context, runID string, status RunStatus, finishedAt time.Time, errMsg *string) (bool, error)
	// RunCancelPending cancels a run that is still pending; false when it was
	// already claimed (the caller falls back to RunRequestCancel).
	RunCancelPending(ctx context.Context, runID string) (bool, error)
	// RunRequestCancel flags a running or sharded run for cancellation by its
	// owner(s); pending shards of a sharded run are cancelled at once. It
	// returns false when the run is in neither state. Repeating the request
	// returns true and keeps the first request.
	RunRequestCancel(ctx context.Context, runID string) (bool, error)
	// RunPendingCancellations lists this instance's running runs that carry a
	// cancel request, ordered by run id.
	RunPendingCancellations(ctx context.Context) ([]string, error)

	// InstanceHeartbeat upserts this instance's membership row.
	InstanceHeartbeat(ctx context.Context, hb InstanceHeartbeat) error
	// InstanceListLive lists members whose last heartbeat is within ttl,
	// ordered by instance id.
	InstanceListLive(ctx context.Context, ttl time.Duration) ([]InstanceRecord, error)
	// InstancePrune deletes members not heartbeated within olderThan.
	InstancePrune(ctx context.Context, olderThan time.Duration) (int, error)

	// ShardInsert idempotently inserts the shard set of a run (conflicts on
	// (run, shard) are ignored) and returns how many rows were new.
	ShardInsert(ctx context.Context, runID string, shards []ShardInsert) (int, error)
	// ShardClaim claims up to limit pending shards, largest size estimate
	// first (unknown sizes last, then run id, shard id), for this instance with
	// a fresh lease, and returns them in that order. Exclusive across
	// processes; shards of a run with a cancel request are not claimed.
	ShardClaim(ctx context.Context, limit int) ([]ClaimedShard, error)
	// ShardRenewLeases extends the lease of this instance's running shards.
	ShardRenewLeases(ctx context.Context) (int, error)
	// ShardReclaimOrphans requeues running shards whose lease expired (owner
	// cleared, attempt+1) or, once attempt has reached maxAttempts, fails them
	// with the error of RunReclaimOrphans, keeping their attempt count.
	ShardReclaimOrphans(ctx context.Context, maxAttempts int) (ReclaimReport, error)
	// ShardRelease puts a running shard this instance owns back to pending,
	// owner cleared and attempt+1, like RunRelease.
	ShardRelease(ctx context.Context, runID, shardID string) (bool, error)
	// ShardFinalize writes a shard's terminal result only while this instance
	// owns it and it is running. A non-terminal status is an error.
	ShardFinalize(ctx context.Context, runID, shardID string, res ShardResult) (bool, error)
	// ShardProgress aggregates the shard states of a run.
	ShardProgress(ctx context.Context, runID string) (ShardProgress, error)
	// ShardProgressInFlight aggregates the shard states of every run still
	// sharded, across the cluster: the shards of finished runs are left out,
	// so the cost follows the work in progress, not the history.
	ShardProgressInFlight(ctx context.Context) (ShardProgress, error)
	// ShardPendingCancellations lists the runs for which this instance runs a
	// shard whose parent carries a cancel request, ordered by run id.
	ShardPendingCancellations(ctx context.Context) ([]string, error)
	// ShardFinalizeCompletedParents finalizes every sharded run whose shards
	// are all terminal (failed if any shard failed, else cancelled if any was
	// cancelled, else completed) and returns the run ids it finalized, ordered.
	// First it cancels the pending shards of sharded runs with a cancel
	// request: no one claims those, and a shard can return to pending after
	// the cancel (a lapsed lease, a hand-back).
	// The parent's records_written becomes the sum of its shards'.
	ShardFinalizeCompletedParents(ctx context.Context) ([]string, error)

	// AuditInsert appends one audit entry.
	AuditInsert(ctx context.Context, e AuditEntry) error
	// AuditList returns matching entries, newest first (timestamp, then id).
	// Since and Until are inclusive; a Limit <= 0 means DefaultAuditLimit.
	AuditList(ctx context.Context, f AuditFilter) ([]AuditEntry, error)

	// RunLogAppend persists a batch of a run's log lines, keeping only the
	// lines among the run's newest maxLinesPerRun sequence numbers (<= 0: no
	// cap): with seqs numbered densely, as a run's lines are, that is its
	// newest maxLinesPerRun lines, and the cap costs the same at a million
	// lines as at ten. The cap counts within the LogBlock of the batch's
	// lines: a run whose execution has parts logged independently (a
	// cluster run's attempts and shards) numbers each part in a block of its
	// own, and one part's lines never push out another's. When older lines
	// are dropped the run is marked truncated. A line whose seq is already
	// stored is ignored, so a retried batch never duplicates.
	RunLogAppend(ctx context.Context, runID string, lines []RunLogLine, maxLinesPerRun int) error
	// RunLogList returns up to limit lines with seq > after, oldest first; a
	// limit <= 0 means DefaultRunLogLimit.
	RunLogList(ctx context.Context, runID string, after int64, limit int) (RunLogPage, error)
	// RunLogPurge deletes log lines captured longer than olderThan ago, and the
	// truncation mark of a run with no lines left.
	RunLogPurge(ctx context.Context, olderThan time.Duration) (int, error)

	// Purge applies the retention policy in one transaction: terminal runs
	// finished before the window (with their shards and logs), expired
	// idempotency claims, stale members and old audit entries; shards whose
	// run no longer exists are always deleted.
	Purge(ctx context.Context, p PurgePolicy) (PurgeReport, error)
}

// Options configure a Store.
type Options struct {
	// InstanceID is stamped as owner on the runs and shards this store writes.
	// Empty means a fresh random id.
	InstanceID string
	// LeaseTTL is how far ahead writes and heartbeats push a lease. Zero means
	// DefaultLeaseTTL.
	LeaseTTL time.Duration
	// ConnectBudget bounds how long Open retries a transiently unreachable
	// database before it returns the error. Zero means DefaultConnectBudget.
	ConnectBudget time.Duration
}

// Defaults for Options.
const (
	DefaultLeaseTTL      = 30 * time.Second
	DefaultConnectBudget = 5 * time.Second
)

// Page sizes used when a caller passes no limit; they match the /v1 API's
// defaults.
const (
	DefaultListLimit   = 50
	DefaultAuditLimit  = 100
	DefaultRunLogLimit = 1000
)
