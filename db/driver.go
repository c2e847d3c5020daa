package db

import (
	"context"
	"encoding/json"
	"time"
)

// Driver is one dialect's access to its database, beneath the Store: a
// method per operation, each atomic by itself (one statement, or one
// transaction where the dialect needs several) and each handed its
// parameters complete (the owner, the instant, the lease expiry, the text of
// an error to record), so a dialect decides nothing the other could decide
// differently. The Store over it (NewStore) holds the rules: which state
// moves where, when a lease lapses, what a page or a claim returns and in
// which order, how a run is encoded.
//
// Like the Store it is composed per domain; a new domain adds its own.
//
// Errors: a driver returns an *Error carrying the verdict of its driver's
// typed error, with Op left to the Store; a missing row of a read is
// ErrNotFound.
type Driver interface {
	// Dialect names the database: "postgres" or "sqlite".
	Dialect() string
	// Close releases the connections.
	Close() error
	// Ping checks that the database answers.
	Ping(ctx context.Context) error

	IdempotencyDriver
	RunDriver
	ClusterDriver
	ShardDriver
	AuditDriver
	LogDriver
	RetentionDriver
	CatalogDriver
	LeaderDriver
	WakeDriver
	TemplateDriver
	TriggerDriver
	LocalOutputDriver
	CallbackDriver
}

// LocalOutputDriver stores the ledger of written files.
type LocalOutputDriver interface {
	// LocalOutputUpsert inserts p as a new entry with id p.ID when its path
	// has no live entry, else updates the live one, and returns the entry.
	LocalOutputUpsert(ctx context.Context, p *LocalOutputUpsertParams) (LocalOutput, error)
	// LocalOutputGet returns one entry or ErrNotFound.
	LocalOutputGet(ctx context.Context, id string) (LocalOutput, error)
	// LocalOutputList returns up to p.Limit matching entries below p.Cursor,
	// ordered by id descending.
	LocalOutputList(ctx context.Context, p *LocalOutputListParams) ([]LocalOutput, error)
	// LocalOutputMarkDeleted sets deleted_at of a live entry and returns it;
	// ErrNotFound when there is none.
	LocalOutputMarkDeleted(ctx context.Context, id string, at time.Time) (LocalOutput, error)
}

// LocalOutputUpsertParams are the arguments of
// LocalOutputDriver.LocalOutputUpsert.
type LocalOutputUpsertParams struct {
	ID string
	LocalOutputWrite
}

// LocalOutputListParams are the arguments of LocalOutputDriver.LocalOutputList.
type LocalOutputListParams struct {
	RunID, PathPrefix *string
	Cursor            string
	Limit             int
}

// IdempotencyDriver stores idempotency claims.
type IdempotencyDriver interface {
	// IdempotencyClaim inserts the claim, or takes over one claimed before
	// p.ExpiredBefore (nil: never), and otherwise returns the holder.
	IdempotencyClaim(ctx context.Context, p *IdempotencyClaimParams) (IdempotencyHolder, error)
	// IdempotencyRelease deletes the claims of runID.
	IdempotencyRelease(ctx context.Context, runID string) error
}

// RunDriver stores runs.
type RunDriver interface {
	// RunInsert inserts p.Run owned by p.Owner, with p.Audit when set.
	RunInsert(ctx context.Context, p *RunInsertParams) error
	// RunStart moves a queued run p.Owner owns to running.
	RunStart(ctx context.Context, p *RunStartParams) (bool, error)
	// RunFinish writes the terminal columns of p.Run (status, started_at,
	// finished_at, records_written, error, invocations), clears the lease,
	// and appends p.Lines, trimming them by p.Trim. Fenced, only a run
	// p.Owner owns that is not terminal is written; unfenced, a missing run
	// is inserted whole, owned by p.Owner. It reports whether the run was
	// written.
	RunFinish(ctx context.Context, p *RunFinishParams) (bool, error)
	// RunGet returns one run or ErrNotFound.
	RunGet(ctx context.Context, runID string) (RunRow, error)
	// RunStatus returns a run's status or ErrNotFound.
	RunStatus(ctx context.Context, runID string) (RunStatus, error)
	// RunList returns up to p.Limit matching runs ordered (submitted_at
	// DESC, run_id DESC), below p.Cursor's run; none when the cursor names
	// no run.
	RunList(ctx context.Context, p *RunListParams) ([]RunRow, error)
	// RunDelete deletes a terminal run with its claims, shards and logs, and
	// reports whether it did.
	RunDelete(ctx context.Context, runID string) (bool, error)
	// RunRenewLeases sets the lease of p.Owner's non-terminal runs and
	// returns their ids, in no particular order.
	RunRenewLeases(ctx context.Context, p *LeaseParams) ([]string, error)
	// RunFailLapsed fails queued and running runs whose lease lapsed
	// before p.Now.
	RunFailLapsed(ctx context.Context, p *RunFailParams) (int, error)
	// RunFailUnfinished fails every queued and running run and returns
	// their ids.
	RunFailUnfinished(ctx context.Context, p *RunFailParams) ([]string, error)
	// RunCancelPending cancels a pending run.
	RunCancelPending(ctx context.Context, p *RunCancelPendingParams) (bool, error)
	// RunRequestCancel flags a running or sharded run (keeping an earlier
	// request) and cancels the pending shards of a sharded one.
	RunRequestCancel(ctx context.Context, p *RunRequestCancelParams) (bool, error)
}

// ClusterDriver stores membership and the cluster's claims of runs.
type ClusterDriver interface {
	// InstanceHeartbeat upserts a membership row.
	InstanceHeartbeat(ctx context.Context, p *InstanceHeartbeatParams) error
	// InstanceListLive lists the members heartbeated at or after since,
	// ordered by instance id.
	InstanceListLive(ctx context.Context, since time.Time) ([]InstanceRecord, error)
	// InstanceWorkList lists the running runs and shards that have an
	// owner, ordered by owner, run id and shard id.
	InstanceWorkList(ctx context.Context) ([]InstanceWork, error)
	// RunClaimPending moves up to p.Limit of the oldest pending runs to
	// running for p.Owner, in no particular order, exclusively.
	RunClaimPending(ctx context.Context, p *RunClaimPendingParams) ([]RunRow, error)
	// RunRequeueLapsed, in one transaction, fails as poison the running runs
	// whose lease lapsed at the attempt cap and requeues the others.
	RunRequeueLapsed(ctx context.Context, p *RequeueLapsedParams) (ReclaimReport, error)
	// RunRelease hands a running run p.Owner owns back to pending.
	RunRelease(ctx context.Context, p *RunReleaseParams) (bool, error)
	// RunSetProgress sets records_written of p.Owner's running runs.
	RunSetProgress(ctx context.Context, p *RunSetProgressParams) (int, error)
	// RunPendingCancellations lists owner's running runs with a cancel
	// request, ordered by run id.
	RunPendingCancellations(ctx context.Context, owner string) ([]string, error)
}

// ShardDriver stores source shards.
type ShardDriver interface {
	// RunShard marks a running (or already sharded) run p.Owner owns
	// sharded and inserts the missing shards, cancelled when the run carries
	// a cancel request.
	RunShard(ctx context.Context, p *RunShardParams) (bool, error)
	// RunFinalizeShardedParent moves a sharded run with no pending or
	// running shard to p.Status, its records the sum of its shards'.
	RunFinalizeShardedParent(ctx context.Context, p *RunFinalizeShardedParentParams) (bool, error)
	// ShardClaim claims up to p.Limit of the largest pending shards of runs
	// without a cancel request for p.Owner, in no particular order,
	// exclusively.
	ShardClaim(ctx context.Context, p *ShardClaimParams) ([]ShardClaimRow, error)
	// ShardRenewLeases sets the lease of p.Owner's running shards and
	// returns them, in no particular order.
	ShardRenewLeases(ctx context.Context, p *LeaseParams) ([]ShardKey, error)
	// ShardRequeueLapsed is RunRequeueLapsed for shards.
	ShardRequeueLapsed(ctx context.Context, p *RequeueLapsedParams) (ReclaimReport, error)
	// ShardRelease hands a running shard p.Owner owns back to pending.
	ShardRelease(ctx context.Context, p *ShardReleaseParams) (bool, error)
	// ShardFinalize writes the result of a running shard p.Owner owns.
	ShardFinalize(ctx context.Context, p *ShardFinalizeParams) (bool, error)
	// ShardProgress counts a run's shards by state.
	ShardProgress(ctx context.Context, runID string) (ShardProgress, error)
	// ShardLineages lists the lineage of a run's completed shards that
	// have one, ordered by shard id.
	ShardLineages(ctx context.Context, runID string) ([]json.RawMessage, error)
	// ShardList lists a run's shards, ordered by shard id.
	ShardList(ctx context.Context, runID string) ([]ShardRecord, error)
	// ShardProgressInFlight counts the shards of every sharded run by state.
	ShardProgressInFlight(ctx context.Context) (ShardProgress, error)
	// ShardPendingCancellations lists the runs with a cancel request of
	// which owner runs a shard, ordered by run id.
	ShardPendingCancellations(ctx context.Context, owner string) ([]string, error)
	// ShardCancelStranded cancels the pending shards of sharded runs that
	// carry a cancel request.
	ShardCancelStranded(ctx context.Context, p *ShardCancelStrandedParams) (int, error)
	// ShardCompletedParents lists the sharded runs whose shards are all
	// terminal, with their counts.
	ShardCompletedParents(ctx context.Context) ([]ShardedParent, error)
}

// AuditDriver stores the audit log.
type AuditDriver interface {
	// AuditInsert appends one entry.
	AuditInsert(ctx context.Context, e *AuditEntry) error
	// AuditList returns up to p.Limit matching entries, newest first
	// (timestamp, then id).
	AuditList(ctx context.Context, p *AuditListParams) ([]AuditEntry, error)
}

// LogDriver stores run log lines.
type LogDriver interface {
	// RunLogAppend inserts the lines new to the run and trims by p.Trim.
	RunLogAppend(ctx context.Context, p *RunLogAppendParams) error
	// RunLogList reads one page of a run's lines, oldest first, and whether
	// the run is marked truncated.
	RunLogList(ctx context.Context, p *RunLogListParams) (RunLogPage, error)
	// RunLogPurge deletes lines captured before before, and the marks of
	// runs left without lines, and returns the lines deleted.
	RunLogPurge(ctx context.Context, before time.Time) (int, error)
}

// RetentionDriver deletes expired history.
type RetentionDriver interface {
	// Purge deletes, in one transaction, what each set cutoff expires, and
	// every shard whose run is gone.
	Purge(ctx context.Context, p *PurgeParams) (PurgeReport, error)
}

// CatalogDriver stores the data movement catalog and config snapshots.
type CatalogDriver interface {
	// CatalogRecord writes a batch in one transaction: first it claims
	// p.BatchID, writing nothing when the id was claimed before (the batch
	// was recorded, and this is a retry), and forgets the ids claimed
	// before p.ForgetBefore; then the datasets upserted (p.Datasets, in id
	// order, so concurrent writers lock rows in one order), each adding
	// its StatsRecorded to the dataset's count of volume points and
	// reading the sum back; the stats rows written as the blocks
	// CatalogStatBlocks makes of them, the blocks that Trims trimmed; each
	// schema version appended where its hash differs from its dataset's
	// newest; the edges upserted; and the snapshots applied in order.
	CatalogRecord(ctx context.Context, p *CatalogRecordParams) error
	// CatalogDatasetList returns up to p.Limit matching datasets ordered
	// (last_seen DESC, id DESC), below p.Cursor's dataset; none when the
	// cursor names no dataset.
	CatalogDatasetList(ctx context.Context, p *CatalogDatasetListParams) ([]CatalogDatasetRow, error)
	// CatalogDatasetGet returns one dataset or ErrNotFound.
	CatalogDatasetGet(ctx context.Context, id string) (CatalogDatasetRow, error)
	// CatalogDatasetExists reports whether a dataset has the id.
	CatalogDatasetExists(ctx context.Context, id string) (bool, error)
	// CatalogSchemaVersions returns a dataset's newest limit versions,
	// newest first.
	CatalogSchemaVersions(ctx context.Context, id string, limit int) ([]CatalogSchemaVersionRow, error)
	// CatalogStatBlocks returns the blocks holding any of a dataset's
	// newest points, newest first.
	CatalogStatBlocks(ctx context.Context, id string, newest int) ([]CatalogStatBlockRow, error)
	// CatalogEdges returns the newest limit edges, CatalogEdgesTouching the
	// newest limit from or to any of ids; both ordered by last_seen
	// descending, then their ids.
	CatalogEdges(ctx context.Context, limit int) ([]CatalogEdge, error)
	CatalogEdgesTouching(ctx context.Context, ids []string, limit int) ([]CatalogEdge, error)
	// ConfigSnapshotGet returns a pipeline's snapshots or ErrNotFound.
	ConfigSnapshotGet(ctx context.Context, pipeline string) (ConfigSnapshots, error)
}

// CatalogRecordParams are the arguments of CatalogDriver.CatalogRecord:
// a batch as the Store aggregated it.
type CatalogRecordParams struct {
	// BatchID names the batch, the same on every attempt to write it.
	BatchID    string
	RecordedAt time.Time
	// ForgetBefore, when set, has the ids claimed before it forgotten.
	ForgetBefore time.Time
	Datasets     []CatalogDatasetWrite
	Stats        []CatalogStatWrite
	// Versions are the schema versions to append, in order, each only if
	// its hash differs from its dataset's newest.
	Versions []CatalogVersionWrite
	Edges    []CatalogEdgeWrite
	// Snapshots are applied in order, each as ConfigSnapshotUpsert does.
	Snapshots []ConfigSnapshot
	StatsKeep int
}

// CatalogDatasetWrite is one dataset of a batch: the counts of the batch's
// invocations that touched it, and the fields of the newest of them.
type CatalogDatasetWrite struct {
	ID, URI, Kind string
	// URIFolded is URI case-folded, for the search.
	URIFolded           string
	AsSource, AsSink    bool
	FirstSeen, LastSeen time.Time
	LastRunID, Pipeline string
	LastRecords         int64
	TotalRecords        int64
	Runs                int64
	// StatsRecorded is how many of the batch's stats rows are the
	// dataset's.
	StatsRecorded int64
}

// CatalogStatWrite is one stats row of a batch.
type CatalogStatWrite struct {
	DatasetID, RunID, RowID, Role string
	Status                        RunStatus
	RecordedAt                    time.Time
	Records                       int64
	Bytes                         *int64
	DurationMS                    int64
}

// CatalogStatBlock is what a batch writes of a dataset's volume points:
// Points of them, the dataset's last_seq-points+1 … LastSeq, encoded as
// Body. Floor is the dataset's count less what it keeps: a block ending
// at or below it holds only points it no longer keeps. The blocks to trim
// with the batch are those ending above PrevFloor, the floor before the
// batch, and at or below Floor; those below were trimmed before.
type CatalogStatBlock struct {
	DatasetID string
	LastSeq   int64
	Points    int64
	Body      []byte
	PrevFloor int64
	Floor     int64
}

// Trims reports whether the batch leaves any of the dataset's blocks
// without a point kept: not before its count passes what it keeps.
func (b CatalogStatBlock) Trims() bool { return b.Floor >= 1 }

// CatalogStatBlockRow is a stored block of volume points.
type CatalogStatBlockRow struct {
	LastSeq, Points int64
	Body            []byte
}

// CatalogVersionWrite is a schema version a batch may append.
type CatalogVersionWrite struct {
	DatasetID  string
	RecordedAt time.Time
	RunID      string
	// Schema is the JSON array of the columns.
	Schema     []byte
	SchemaHash string
}

// CatalogEdgeWrite is one edge of a batch, aggregated like a dataset.
type CatalogEdgeWrite struct {
	SrcID, DstID        string
	Pipeline, RowID     string
	FirstSeen, LastSeen time.Time
	LastRunID           string
	Runs                int64
	LastRecords         int64
}

// CatalogDatasetListParams are the arguments of
// CatalogDriver.CatalogDatasetList.
type CatalogDatasetListParams struct {
	Kind *string
	// Folded is the case-folded substring the URI must contain.
	Folded *string
	Cursor string
	Limit  int
}

// CatalogDatasetRow is a dataset as a driver reads it, with its newest
// schema version's number, columns (JSON) and hash.
type CatalogDatasetRow struct {
	ID, URI, Kind       string
	AsSource, AsSink    bool
	FirstSeen, LastSeen time.Time
	LastRunID, Pipeline string
	LastRecords         int64
	TotalRecords        int64
	Runs                int64
	SchemaVersion       int
	Schema              []byte
	SchemaHash          string
}

// CatalogSchemaVersionRow is a schema version as a driver reads it.
type CatalogSchemaVersionRow struct {
	Version    int
	RecordedAt time.Time
	RunID      string
	Schema     []byte
	SchemaHash string
}

// LeaderDriver stores the leader lease.
type LeaderDriver interface {
	// LeaderElect takes the lease for p.LeaderID, or renews it when
	// p.LeaderID holds it, unless another member holds it unexpired at
	// p.Now, and reports whether p.LeaderID holds it now.
	LeaderElect(ctx context.Context, p *LeaderElectParams) (bool, error)
	// LeaderResign deletes the lease when leaderID holds it, and reports
	// whether it did.
	LeaderResign(ctx context.Context, leaderID string) (bool, error)
}

// WakeDriver carries wake-ups between the processes sharing the database.
type WakeDriver interface {
	// WakeNotify sends topic to every listener; a no-op without
	// notifications.
	WakeNotify(ctx context.Context, topic string) error
	// WakeListen holds one listening connection and calls wake with each
	// topic received until ctx ends or the connection fails, and returns
	// why; ErrNoWakeups at once without notifications.
	WakeListen(ctx context.Context, wake func(topic string)) error
}

// LeaderElectParams are the arguments of LeaderDriver.LeaderElect.
type LeaderElectParams struct {
	LeaderID       string
	Now, ExpiresAt time.Time
}

// RunRow is a run as a driver stores it: its columns, with its documents
// as the JSON the Store encodes and decodes.
type RunRow struct {
	RunID          string
	Name           *string
	Labels         []byte
	Status         RunStatus
	SubmittedAt    time.Time
	StartedAt      *time.Time
	FinishedAt     *time.Time
	IdempotencyKey *string
	Attempt        int
	RecordsWritten int64
	Error          *string
	// TemplateID and TemplateVersion are both set or both nil.
	TemplateID      *string
	TemplateVersion *int
	// Submission is the JSON object of what never changes after submit.
	Submission []byte
	// Invocations is the JSON array of the invocation results, nil until
	// the run finished with some.
	Invocations []byte
}

// IdempotencyClaimParams are the arguments of IdempotencyDriver.IdempotencyClaim.
type IdempotencyClaimParams struct {
	Key, Fingerprint, RunID string
	Now                     time.Time
	// ExpiredBefore: a claim made before it is taken over; nil: never.
	ExpiredBefore *time.Time
}

// IdempotencyHolder is the claim on a key after IdempotencyClaim.
type IdempotencyHolder struct {
	// Fresh: the caller's claim was written (new or taken over).
	Fresh              bool
	RunID, Fingerprint string
}

// RunInsertParams are the arguments of RunDriver.RunInsert.
type RunInsertParams struct {
	Run            RunRow
	Owner          string
	LeaseExpiresAt time.Time
	// Audit is written with the run when set.
	Audit *AuditEntry
	// Fire, when set, is written first, in the same transaction: an event
	// that has a fire already writes nothing and fails with
	// ErrAlreadyFired.
	Fire *TriggerFireRow
}

// RunStartParams are the arguments of RunDriver.RunStart.
type RunStartParams struct {
	RunID, Owner              string
	StartedAt, LeaseExpiresAt time.Time
}

// RunFinishParams are the arguments of RunDriver.RunFinish.
type RunFinishParams struct {
	Run    RunRow
	Owner  string
	Fenced bool
	Lines  []RunLogLine
	// Trim, when set, applies the per-run log cap after the lines.
	Trim *LogTrim
	// Outputs are upserted into the ledger in the same transaction.
	Outputs []LocalOutputUpsertParams
}

// LogTrim keeps the lines among the newest Keep seqs of the block
// [BlockStart, BlockEnd) of a run, marking the run truncated at Now when it
// drops any.
type LogTrim struct {
	Keep                 int64
	BlockStart, BlockEnd int64
	Now                  time.Time
}

// RunListParams are the arguments of RunDriver.RunList.
type RunListParams struct {
	// Statuses are OR-ed; empty means every status.
	Statuses     []RunStatus
	Name         *string
	Template     *string
	Since, Until *time.Time
	// Cursor is the run the page starts below; empty for the first page.
	Cursor string
	Limit  int
}

// LeaseParams renew the leases of Owner's work.
type LeaseParams struct {
	Owner          string
	LeaseExpiresAt time.Time
}

// RunFailParams fail runs at Now with Error.
type RunFailParams struct {
	Now   time.Time
	Error string
}

// RunCancelPendingParams are the arguments of RunDriver.RunCancelPending.
type RunCancelPendingParams struct {
	RunID string
	Now   time.Time
}

// RunRequestCancelParams are the arguments of RunDriver.RunRequestCancel.
type RunRequestCancelParams struct {
	RunID string
	Now   time.Time
	// ShardError is the error of the pending shards it cancels.
	ShardError string
}

// InstanceHeartbeatParams are the arguments of ClusterDriver.InstanceHeartbeat.
type InstanceHeartbeatParams struct {
	InstanceID    string
	StartedAt     time.Time
	Now           time.Time
	Listen        string
	MaxConcurrent int
	InFlight      int
	StateFormat   int
}

// RunClaimPendingParams are the arguments of ClusterDriver.RunClaimPending.
type RunClaimPendingParams struct {
	Owner               string
	Now, LeaseExpiresAt time.Time
	Limit               int
}

// RequeueLapsedParams requeue the work whose lease lapsed before Now,
// failing what reached MaxAttempts with PoisonFormat (PoisonErrorFormat).
type RequeueLapsedParams struct {
	Now          time.Time
	MaxAttempts  int
	PoisonFormat string
}

// RunReleaseParams are the arguments of ClusterDriver.RunRelease.
type RunReleaseParams struct {
	RunID, Owner string
}

// RunSetProgressParams are the arguments of ClusterDriver.RunSetProgress.
type RunSetProgressParams struct {
	Owner string
	// Runs are ordered by run id.
	Runs []RunProgress
}

// RunProgress is one run's live count.
type RunProgress struct {
	RunID          string
	RecordsWritten int64
}

// RunShardParams are the arguments of ShardDriver.RunShard.
type RunShardParams struct {
	RunID, Owner string
	Now          time.Time
	// Shards have a descriptor each (JSON null when the source gave none).
	Shards []ShardInsert
	// CancelledError is the error of shards inserted cancelled.
	CancelledError string
}

// RunFinalizeShardedParentParams are the arguments of
// ShardDriver.RunFinalizeShardedParent.
type RunFinalizeShardedParentParams struct {
	RunID      string
	Status     RunStatus
	FinishedAt time.Time
	Error      *string
}

// ShardClaimParams are the arguments of ShardDriver.ShardClaim.
type ShardClaimParams struct {
	Owner          string
	LeaseExpiresAt time.Time
	Limit          int
}

// ShardClaimRow is a claimed shard with its parent run.
type ShardClaimRow struct {
	RunID, ShardID string
	Descriptor     []byte
	SizeEstimate   *int64
	Attempt        int
	Run            RunRow
}

// ShardReleaseParams are the arguments of ShardDriver.ShardRelease.
type ShardReleaseParams struct {
	RunID, ShardID, Owner string
}

// ShardFinalizeParams are the arguments of ShardDriver.ShardFinalize.
type ShardFinalizeParams struct {
	RunID, ShardID, Owner string
	Result                ShardResult
	Now                   time.Time
}

// ShardCancelStrandedParams are the arguments of
// ShardDriver.ShardCancelStranded.
type ShardCancelStrandedParams struct {
	Now   time.Time
	Error string
}

// ShardedParent is a sharded run whose shards are all terminal, with the
// counts that decide its outcome.
type ShardedParent struct {
	RunID                    string
	Total, Failed, Cancelled int
}

// AuditListParams are the arguments of AuditDriver.AuditList.
type AuditListParams struct {
	Principal, Action *string
	Since, Until      *time.Time
	Limit             int
}

// RunLogAppendParams are the arguments of LogDriver.RunLogAppend.
type RunLogAppendParams struct {
	RunID string
	Lines []RunLogLine
	Trim  *LogTrim
}

// RunLogListParams are the arguments of LogDriver.RunLogList.
type RunLogListParams struct {
	RunID string
	After int64
	Limit int
}

// PurgeParams are the cutoffs of a purge; a nil one purges nothing of its
// kind.
type PurgeParams struct {
	// RunsFinishedBefore expires terminal runs with their shards and logs.
	RunsFinishedBefore *time.Time
	ClaimsBefore       *time.Time
	InstancesBefore    *time.Time
	AuditBefore        *time.Time
}

// TemplateDriver stores pipeline templates. A read is one statement, so
// one snapshot; the writes are primitives run inside a transaction the
// Store opens, so the Store's rules see and change one consistent template.
type TemplateDriver interface {
	TemplateReader
	// TemplateWrite runs fn in one write transaction, committed when fn
	// returns nil and rolled back otherwise. fn must use the ctx it is
	// given, and must lock the template it changes (TemplateLock or
	// TemplateNextVersion) before anything else: writes of one template
	// then run one at a time, across processes.
	TemplateWrite(ctx context.Context, fn func(ctx context.Context, w TemplateWriter) error) error
}

// TemplateReader reads the template tables, each method in one statement.
type TemplateReader interface {
	// TemplateVersionGet returns one version or ErrNotFound.
	TemplateVersionGet(ctx context.Context, id string, version int) (TemplateVersion, error)
	// TemplateFacts returns the facts of one template; no versions when it
	// does not exist.
	TemplateFacts(ctx context.Context, id string) (TemplateFacts, error)
	// TemplateFactsAll returns the facts of every template, by id.
	TemplateFactsAll(ctx context.Context) (map[string]TemplateFacts, error)
	// TemplateListNewest returns the newest version of every template,
	// without its body, in no particular order.
	TemplateListNewest(ctx context.Context) ([]TemplateVersion, error)
}

// TemplateWriter changes the template tables, inside TemplateWrite.
type TemplateWriter interface {
	TemplateReader
	// TemplateLock locks an existing template until the transaction ends;
	// ErrNotFound when it does not exist.
	TemplateLock(ctx context.Context, id string) error
	// TemplateNextVersion locks the template, creating it at now when it
	// does not exist, and takes its next version number.
	TemplateNextVersion(ctx context.Context, id string, now time.Time) (int, error)
	// TemplateVersionInsert inserts a version of a locked template.
	TemplateVersionInsert(ctx context.Context, v *TemplateVersion) error
	// TemplateVersionDelete deletes a version with what points at it.
	TemplateVersionDelete(ctx context.Context, id string, version int) error
	// TemplateDelete deletes a template with everything of it.
	TemplateDelete(ctx context.Context, id string) error
	// TemplateTagSet points a channel at a version.
	TemplateTagSet(ctx context.Context, p *TemplateTagParams) error
	// TemplateLaunchAppend appends a launch of p.Version, numbered by the
	// template's launch counter, and returns its seq.
	TemplateLaunchAppend(ctx context.Context, p *TemplateLaunchParams) (int, error)
	// TemplateLaunchTrim deletes the launch-log entries below seq.
	TemplateLaunchTrim(ctx context.Context, id string, seq int) error
	// TemplateDeprecationSet replaces the deprecation of the template
	// (p.Version nil) or of a version.
	TemplateDeprecationSet(ctx context.Context, p *TemplateDeprecationParams) error
	// TemplateDeprecationClear deletes the deprecation of the template
	// (version nil) or of a version.
	TemplateDeprecationClear(ctx context.Context, id string, version *int) error
}

// TemplateTagParams are the arguments of TemplateWriter.TemplateTagSet.
type TemplateTagParams struct {
	ID, Tag string
	Version int
	Now     time.Time
	By      *string
}

// TemplateLaunchParams are the arguments of
// TemplateWriter.TemplateLaunchAppend.
type TemplateLaunchParams struct {
	ID      string
	Version int
	Now     time.Time
	By      *string
}

// TemplateDeprecationParams are the arguments of
// TemplateWriter.TemplateDeprecationSet.
type TemplateDeprecationParams struct {
	ID          string
	Version     *int
	Deprecation TemplateDeprecation
}
