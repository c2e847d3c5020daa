// Package db is faucet's data-access layer: the run-history Store, its domain
// types and errors. The Store's rules live here once, over a Driver per
// dialect (db/postgres, db/sqlite) that runs sqlc-generated queries;
// everything else in faucet sees only this package.
package db

import (
	"context"
	"encoding/json"
	"time"
)

// Store keeps faucet's run history. It is composed of one interface per
// domain, so a new domain brings its own interface (and migration) instead
// of growing another's. Every method is safe for concurrent use, and every
// fence it documents is enforced by the database (a WHERE clause or a
// transaction), so several processes sharing one database stay correct.
//
// Ownership: a store has an instance id. RunSubmit stamps that id as the
// run's owner with a lease of LeaseTTL; heartbeats renew the leases of the
// runs and shards this instance owns; peers requeue or fail runs whose lease
// lapsed.
//
// Time: every instant a store writes or judges a window by comes from
// Options.Clock. Timestamps are truncated to microseconds before they are
// stored and come back in UTC, so a record reads back equal on every
// dialect. Methods that return lists return them in a documented,
// deterministic order.
type Store interface {
	Lifecycle
	IdempotencyStore
	RunStore
	ClusterStore
	ShardStore
	AuditStore
	LogStore
	RetentionStore
	CatalogStore
	LeaderStore
	WakeStore
	TemplateStore
	TriggerStore
	LocalOutputStore
	CallbackStore
}

// Lifecycle is the store itself: its identity, health and connections.
type Lifecycle interface {
	// InstanceID is the id this store stamps as owner.
	InstanceID() string
	// Dialect names the backing database: "postgres" or "sqlite".
	Dialect() string
	// Close releases the connections.
	Close() error
	// Ping checks that the database answers (readiness probes).
	Ping(ctx context.Context) error
}

// IdempotencyStore owns the idempotency keys of submissions.
type IdempotencyStore interface {
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
}

// RunStore owns a run's record and its own path: submit, start, finish,
// reads, deletion, cancellation and the recovery of runs whose owner died.
//
// A run is stored once: the columns hold every field that changes over its
// life, the submission (config, labels, callback, doctor report, timeout,
// clock, concurrency) is written at submit and never changes, the
// invocation results are written when it finishes, and elapsed_secs is
// derived from started_at and finished_at.
type RunStore interface {
	// RunSubmit writes a new run as given, owned by this instance with a
	// fresh lease, and, when audit is not nil, the audit entry of its
	// submission in the same transaction, so an accepted run and its audit
	// trail are one write. A run id that exists already is an error.
	RunSubmit(ctx context.Context, rec *RunRecord, audit *AuditEntry) error
	// RunStart moves a queued run this instance owns to running with the
	// given start time and a fresh lease. It returns false when the run is
	// not queued or another instance owns it.
	RunStart(ctx context.Context, runID string, startedAt time.Time) (bool, error)
	// RunFinish writes a run's terminal state (status, start and finish
	// times, records written, error, invocation results) together with the
	// log lines it has not persisted yet (applying the per-run cap as
	// RunLogAppend does), in one write, so a reader that sees the run
	// finished reads every line. A missing FinishedAt is stamped with the
	// store's clock. With f.Owned the write is fenced on this instance
	// owning the run and the run not being terminal yet, and false means it
	// was not written: another instance reclaimed the run, a finalizer
	// already won, or the run does not exist (the lines are kept either
	// way). Otherwise a run the store does not have is written whole from
	// f.Record, and the result is always true.
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
	// returns the ids of the runs it renewed, ordered: the runs this instance
	// still owns. A run it executes that is missing was taken from it (its
	// lease lapsed and a peer requeued it), and it must stop executing it.
	RunRenewLeases(ctx context.Context) ([]string, error)
	// RunFailLapsed fails the queued or running runs whose lease lapsed
	// (their owner is presumed dead), never a run with a live lease, and
	// returns how many it failed.
	RunFailLapsed(ctx context.Context) (int, error)
	// RunFailUnfinished fails every queued or running run, whatever its
	// lease, with errMsg, and returns their ids in order. Only a process that
	// knows it is the history's sole user (it holds a local SQLite file
	// locked) may call it: every unfinished run is then an orphan of a crash.
	RunFailUnfinished(ctx context.Context, errMsg string) ([]string, error)
	// RunCancelPending cancels a run that is still pending; false when it was
	// already claimed (the caller falls back to RunRequestCancel).
	RunCancelPending(ctx context.Context, runID string) (bool, error)
	// RunRequestCancel flags a running or sharded run for cancellation by its
	// owner(s); pending shards of a sharded run are cancelled at once. It
	// returns false when the run is in neither state. Repeating the request
	// returns true and keeps the first request.
	RunRequestCancel(ctx context.Context, runID string) (bool, error)
}

// ClusterStore owns what cluster members share: membership, the claim of
// pending runs, their hand-back, live progress and cross-instance cancels.
type ClusterStore interface {
	// InstanceHeartbeat upserts this instance's membership row.
	InstanceHeartbeat(ctx context.Context, hb InstanceHeartbeat) error
	// InstanceListLive lists members whose last heartbeat is within ttl,
	// ordered by instance id.
	InstanceListLive(ctx context.Context, ttl time.Duration) ([]InstanceRecord, error)
	// InstanceWorkList lists the running runs and shards of every member,
	// ordered by owner, run id and shard id (a whole run first).
	InstanceWorkList(ctx context.Context) ([]InstanceWork, error)
	// RunClaimPending moves up to limit of the oldest pending runs to running,
	// started now, owned by this instance with a fresh lease, and returns
	// them oldest first (submitted_at, then run_id). A run is returned to
	// exactly one caller across all processes.
	RunClaimPending(ctx context.Context, limit int) ([]RunRecord, error)
	// RunRequeueLapsed requeues running runs whose lease lapsed (pending,
	// owner cleared, attempt+1; a cancel request survives) or, once attempt
	// has reached maxAttempts, fails them as poison with an error naming the
	// attempt and requeue count (PoisonErrorFormat), keeping their attempt
	// count. maxAttempts caps requeues, so a run whose lease keeps lapsing is
	// executed maxAttempts+1 times; a RunRelease also counts as a requeue.
	RunRequeueLapsed(ctx context.Context, maxAttempts int) (ReclaimReport, error)
	// RunRelease puts a running run this instance owns back to pending, owner
	// cleared and attempt+1, for a peer to claim at once: a member that shuts
	// down hands its runs over instead of failing them. It returns false
	// when this instance no longer owns the run or it is not running.
	RunRelease(ctx context.Context, runID string) (bool, error)
	// RunSetProgress records the records written so far by running runs
	// this instance owns (run id → count), so peers read live counts, and
	// returns how many runs it updated.
	RunSetProgress(ctx context.Context, progress map[string]int64) (int, error)
	// RunPendingCancellations lists this instance's running runs that carry a
	// cancel request, ordered by run id.
	RunPendingCancellations(ctx context.Context) ([]string, error)
}

// ShardStore owns the source shards of sharded runs and the finalize of
// their parent runs.
type ShardStore interface {
	// RunShard turns a running run this instance owns into a sharded run
	// and inserts its shard set (conflicts on (run, shard) ignored), in one
	// transaction: no shard row ever exists while its parent is running, and
	// no sharded parent is left without its shards. A run that carries a
	// cancel request gets its shards inserted cancelled, since no claimer
	// takes them. Repeating the call for a run this instance already sharded
	// inserts the missing shards and returns true; it returns false,
	// inserting nothing, when the run is in any other state or another
	// instance owns it.
	RunShard(ctx context.Context, runID string, shards []ShardInsert) (bool, error)
	// RunFinalizeShardedParent moves a sharded run whose shards are all
	// terminal to the terminal status, fenced on status sharded; it never
	// re-arms owner or lease. The parent's records_written becomes the sum
	// of its shards'. The first caller wins; false while a shard is still
	// pending or running. A non-terminal status is an error.
	RunFinalizeShardedParent(ctx context.Context, runID string, status RunStatus, finishedAt time.Time, errMsg *string) (bool, error)
	// ShardClaim claims up to limit pending shards, largest size estimate
	// first (unknown sizes last, then run id, shard id), for this instance
	// with a fresh lease, and returns them in that order. Exclusive across
	// processes; shards of a run with a cancel request are not claimed.
	ShardClaim(ctx context.Context, limit int) ([]ClaimedShard, error)
	// ShardRenewLeases extends the lease of this instance's running shards
	// and returns the shards it renewed, ordered by run and shard id: like
	// RunRenewLeases, the shards this instance still owns.
	ShardRenewLeases(ctx context.Context) ([]ShardKey, error)
	// ShardRequeueLapsed requeues running shards whose lease lapsed (owner
	// cleared, attempt+1) or, once attempt has reached maxAttempts, fails
	// them with the error of RunRequeueLapsed, keeping their attempt count.
	ShardRequeueLapsed(ctx context.Context, maxAttempts int) (ReclaimReport, error)
	// ShardRelease puts a running shard this instance owns back to pending,
	// owner cleared and attempt+1, like RunRelease.
	ShardRelease(ctx context.Context, runID, shardID string) (bool, error)
	// ShardFinalize writes a shard's terminal result only while this instance
	// owns it and it is running. A non-terminal status is an error.
	ShardFinalize(ctx context.Context, runID, shardID string, res ShardResult) (bool, error)
	// ShardProgress aggregates the shard states of a run.
	ShardProgress(ctx context.Context, runID string) (ShardProgress, error)
	// ShardLineages returns the lineage documents of a run's completed
	// shards, ordered by shard id.
	ShardLineages(ctx context.Context, runID string) ([]json.RawMessage, error)
	// ShardList lists the shards of a run, ordered by shard id; none for a
	// run that was never sharded.
	ShardList(ctx context.Context, runID string) ([]ShardRecord, error)
	// ShardProgressInFlight aggregates the shard states of every run still
	// sharded, across the cluster: the shards of finished runs are left out,
	// so the cost follows the work in progress, not the history.
	ShardProgressInFlight(ctx context.Context) (ShardProgress, error)
	// ShardPendingCancellations lists the runs for which this instance runs a
	// shard whose parent carries a cancel request, ordered by run id.
	ShardPendingCancellations(ctx context.Context) ([]string, error)
	// ShardFinalizeCompletedParents finalizes every sharded run whose shards
	// are all terminal (with ShardedOutcome) and returns the run ids it
	// finalized, ordered. First it cancels the pending shards of sharded
	// runs with a cancel request: no one claims those, and a shard can
	// return to pending after the cancel (a lapsed lease, a hand-back).
	ShardFinalizeCompletedParents(ctx context.Context) ([]string, error)
}

// AuditStore owns the audit log of control-plane actions.
type AuditStore interface {
	// AuditInsert appends one audit entry.
	AuditInsert(ctx context.Context, e AuditEntry) error
	// AuditList returns matching entries, newest first (timestamp, then id).
	// Since and Until are inclusive; a Limit <= 0 means DefaultAuditLimit.
	AuditList(ctx context.Context, f AuditFilter) ([]AuditEntry, error)
}

// LogStore owns the persisted log lines of runs.
type LogStore interface {
	// RunLogAppend persists a batch of a run's log lines, then applies limit:
	// of the lines in limit's seq range, only those among its newest
	// limit.Keep seqs stay. With seqs numbered densely, as a part's lines
	// are, that is its newest Keep lines, and the cap costs the same at a
	// million lines as at ten. A run whose execution has parts logged
	// independently (a cluster run's attempts and shards) gives each part a
	// range of its own, so one part's lines never push out another's. When
	// older lines are dropped the run is marked truncated. A line whose seq
	// is already stored is ignored, so a retried batch never duplicates.
	RunLogAppend(ctx context.Context, runID string, lines []RunLogLine, limit LogCap) error
	// RunLogList returns up to limit lines with seq > after, oldest first; a
	// limit <= 0 means DefaultRunLogLimit.
	RunLogList(ctx context.Context, runID string, after int64, limit int) (RunLogPage, error)
	// RunLogPurge deletes log lines captured longer than olderThan ago, and the
	// truncation mark of a run with no lines left.
	RunLogPurge(ctx context.Context, olderThan time.Duration) (int, error)
}

// CatalogStore owns the data movement catalog: the datasets runs read and
// wrote, their schema timelines and volume, the lineage between them, and
// the config snapshots of pipelines. It accumulates across runs; retention
// never purges it, and deleting a run keeps what the run recorded. Several
// processes may record at once: counters add up, the latest-run fields go
// to the newest record, and no stats row or edge is lost.
type CatalogStore interface {
	// CatalogRecord records a batch in one transaction: each invocation
	// (one that succeeded), and each config snapshot, which becomes its
	// pipeline's latest and makes the latest the previous (one older than
	// the latest, from a slow recorder, is dropped). An invocation
	// recorded before (a retried write) is left out, so it never counts
	// twice; one without datasets records nothing.
	CatalogRecord(ctx context.Context, b CatalogBatch) error
	// CatalogDatasetList returns one page of datasets, ordered by last
	// activity, newest first, then id descending (keyset pagination). A
	// cursor that names no dataset is ErrUnknownCursor.
	CatalogDatasetList(ctx context.Context, f CatalogFilter) (CatalogPage, error)
	// CatalogDatasetGet returns a dataset with its newest DetailTimeline
	// schema versions (oldest first, each with its diff), its newest
	// DetailStats volume points and its newest edges, up to DetailEdges
	// each way; an unknown id is ErrNotFound.
	CatalogDatasetGet(ctx context.Context, id string) (*CatalogDatasetDetail, error)
	// CatalogLineage returns the edges within depth hops of root, in either
	// direction (breadth-first; depth is clamped to 1..MaxLineageDepth), or
	// with root empty the whole graph; at most MaxLineageEdges, newest
	// first. An unknown root has no edges.
	CatalogLineage(ctx context.Context, root string, depth int) (CatalogGraph, error)
	// ConfigSnapshotGet returns a pipeline's latest snapshot and the one
	// before it, or ErrNotFound.
	ConfigSnapshotGet(ctx context.Context, pipeline string) (ConfigSnapshots, error)
}

// LocalOutputStore keeps the ledger of the files the sinks of runs created
// or replaced on the server's disk. An entry is a file at a path, from the
// first write faucet made there until an admin deletes it: later writes to
// the same path update it, and a deleted entry stays, marked, while a new
// write to its path starts a new one. Retention never touches the ledger:
// the files outlive their runs.
type LocalOutputStore interface {
	// LocalOutputRecord records a write: a new entry when w.Path has no
	// live one (Existed then says whether a file was there before faucet
	// first wrote it, and stays), otherwise the live entry's size, file id,
	// run and last written time move to w's. It returns the entry.
	LocalOutputRecord(ctx context.Context, w LocalOutputWrite) (LocalOutput, error)
	// LocalOutputGet returns one entry, or ErrNotFound.
	LocalOutputGet(ctx context.Context, id string) (*LocalOutput, error)
	// LocalOutputList returns one page of entries, newest first (by id, a
	// time-ordered UUID); a Limit <= 0 means DefaultListLimit.
	LocalOutputList(ctx context.Context, f LocalOutputFilter) (LocalOutputPage, error)
	// LocalOutputMarkDeleted marks a live entry deleted now and returns it;
	// false when the entry is missing or was deleted already.
	LocalOutputMarkDeleted(ctx context.Context, id string) (*LocalOutput, bool, error)
}

// RetentionStore applies the retention policy across the domains.
type RetentionStore interface {
	// Purge applies the retention policy in one transaction: terminal runs
	// finished before the window (with their shards and logs), expired
	// idempotency claims, stale members and old audit entries; shards whose
	// run no longer exists are always deleted.
	Purge(ctx context.Context, p PurgePolicy) (PurgeReport, error)
}

// LeaderStore owns the cluster's leader lease: the member holding it runs
// the sweeps (requeueing the work of dead members, finalizing sharded runs,
// purging history) that would otherwise run on every member.
type LeaderStore interface {
	// LeaderElect takes the leader lease for this instance for ttl, or renews
	// it when this instance holds it, and reports whether this instance holds
	// it now. A lease held by another instance is taken over only once it
	// has lapsed, by one caller across all processes.
	LeaderElect(ctx context.Context, ttl time.Duration) (bool, error)
	// LeaderResign gives the lease up when this instance holds it, so a peer
	// is elected at its next attempt instead of after the lease lapsed.
	LeaderResign(ctx context.Context) error
}

// WakeTopic says what a wake-up is about.
type WakeTopic string

// The wake-ups members send each other.
const (
	// WakeWork: runs or shards are pending, for a member with free slots.
	WakeWork WakeTopic = "work"
	// WakeCancel: a run a member executes carries a cancel request.
	WakeCancel WakeTopic = "cancel"
	// WakeLeader: the leader resigned; a member may take the lease.
	WakeLeader WakeTopic = "leader"
)

// WakeStore carries wake-ups between the members sharing a database, so an
// idle member acts on a peer's write at once instead of at its next poll.
// They are hints, never the only way work is found: members still poll,
// and a wake-up lost with a dropped connection costs one poll of latency.
type WakeStore interface {
	// Wake tells every listening member about topic. Without notifications
	// (SQLite) it does nothing.
	Wake(ctx context.Context, topic WakeTopic) error
	// Listen calls wake for every wake-up sent by any member (this one
	// included) until ctx ends, reconnecting after a lost connection, and
	// then returns ctx's error. Each time it starts listening it calls wake
	// with WakeWork too, since what was sent while it did not listen is
	// lost. It returns ErrNoWakeups at once when the dialect has no
	// notifications: the caller relies on its poll alone.
	Listen(ctx context.Context, wake func(WakeTopic)) error
}

// TemplateStore owns the pipeline template registry: versions registered
// once and never changed, channels pointing at versions, the launch log whose
// newest entry is the live version, and deprecations of a template or of one
// version. Every write of a template is one transaction holding the
// template's lock, so concurrent writers (on any process) are applied one
// at a time, and a write that fails leaves nothing behind. Retention never
// purges templates: a template outlives the runs it produced.
type TemplateStore interface {
	// TemplateRegister stores d as the template's next version (1 for a new
	// template; a number is never reused while the template exists), points
	// d.Tags at it and, with d.Launch, launches it, then prunes the
	// template to its newest TemplateVersionRetain versions, keeping any
	// version a channel, the live version or the previous one points at.
	// Launching into a deprecated template is a *DeprecatedError.
	TemplateRegister(ctx context.Context, d TemplateDraft) (TemplateVersion, error)
	// TemplateGet returns one version with its template's state;
	// ErrNotFound when either does not exist.
	TemplateGet(ctx context.Context, id string, version int) (TemplateDetail, error)
	// TemplateState returns a template's state; ErrNotFound when it has no
	// version.
	TemplateState(ctx context.Context, id string) (TemplateState, error)
	// TemplateList returns the newest version of every template (bodies
	// left out) with its state, newest registered first (then by id).
	TemplateList(ctx context.Context, f TemplateListFilter) ([]TemplateSummary, error)
	// TemplateDelete deletes one version (version set) with its channels,
	// launch-log entries and deprecation, or the whole template; deleting a
	// template's last version deletes the template. ErrNotFound when there
	// is nothing to delete.
	TemplateDelete(ctx context.Context, id string, version *int) error
	// TemplateTag points an assignable channel at an existing version,
	// moving it when it pointed elsewhere.
	TemplateTag(ctx context.Context, id, tag string, version int, by *string) error
	// TemplateLaunch makes version the live one by appending it to the
	// launch log. Launching the live version changes nothing
	// (AlreadyLaunched). A deprecated template or version is a
	// *DeprecatedError.
	TemplateLaunch(ctx context.Context, id string, version int, by *string) (LaunchOutcome, error)
	// TemplateRollback launches the previous version, the newest launch of
	// a version other than the live one; ErrNoRollbackTarget when there is
	// none.
	TemplateRollback(ctx context.Context, id string, by *string) (LaunchOutcome, error)
	// TemplateDeprecate deprecates the template (version nil) or one
	// version, replacing an earlier deprecation; a nil d revives it. The
	// store stamps d.DeprecatedAt.
	TemplateDeprecate(ctx context.Context, id string, version *int, d *TemplateDeprecation) error
}

// Options configure a Store.
type Options struct {
	// InstanceID is stamped as owner on the runs and shards this store writes.
	// Empty means a fresh random id.
	InstanceID string
	// LeaseTTL is how far ahead writes and heartbeats push a lease. Zero means
	// DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Clock is the store's time: every instant it writes (leases, finish and
	// heartbeat times) and every window it judges (lapsed leases, expired
	// claims, retention) comes from it, so a test moves time instead of
	// sleeping. Nil means time.Now.
	Clock func() time.Time
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
