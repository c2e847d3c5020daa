package db

import (
	"encoding/json"
	"fmt"
	"time"
)

// RunStatus is the lifecycle state of a submitted run. The string values are
// the wire values of the /v1 API.
type RunStatus string

// Every status a run can be in. Pending exists only in cluster mode: Pending
// runs wait in the shared database for any instance to claim them. A Sharded
// run executes as independently claimed source shards, across a cluster or
// on one server.
const (
	StatusPending   RunStatus = "pending"
	StatusQueued    RunStatus = "queued"
	StatusRunning   RunStatus = "running"
	StatusSharded   RunStatus = "sharded"
	StatusCompleted RunStatus = "completed"
	StatusFailed    RunStatus = "failed"
	StatusCancelled RunStatus = "cancelled"
)

// AllStatuses lists every RunStatus in lifecycle order.
var AllStatuses = []RunStatus{
	StatusPending, StatusQueued, StatusRunning, StatusSharded,
	StatusCompleted, StatusFailed, StatusCancelled,
}

// Terminal reports whether no further transition can happen from s.
func (s RunStatus) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// ParseRunStatus parses a lowercase status name.
func ParseRunStatus(s string) (RunStatus, error) {
	for _, v := range AllStatuses {
		if string(v) == s {
			return v, nil
		}
	}
	return "", fmt.Errorf("unknown run status %q", s)
}

// InvocationRecord is the outcome of one pipeline invocation (one matrix row,
// or the single invocation of a plain pipeline).
type InvocationRecord struct {
	RowID           string  `json:"row_id"`
	ParentRecordKey *string `json:"parent_record_key"`
	RunID           string  `json:"run_id,omitempty"`
	RecordsWritten  int64   `json:"records_written"`
	// RecordsDeadLettered and RecordsDropped count the records the sink
	// refused that went to the dead-letter file, or were dropped.
	RecordsDeadLettered int64   `json:"records_dead_lettered,omitempty"`
	RecordsDropped      int64   `json:"records_dropped,omitempty"`
	DurationMS          int64   `json:"duration_ms"`
	Error               *string `json:"error"`
}

// RunRecord is one run's full record: what GET /v1/runs/{id} returns and what
// the history database keeps. Fields after Attempt are execution inputs a
// cluster peer needs to re-run the submission; the HTTP layer decides which of
// them it exposes. ElapsedSecs is not stored: the store derives it from
// StartedAt and FinishedAt.
type RunRecord struct {
	RunID          string             `json:"run_id"`
	Name           *string            `json:"name"`
	Labels         map[string]string  `json:"labels"`
	Status         RunStatus          `json:"status"`
	SubmittedAt    time.Time          `json:"submitted_at"`
	StartedAt      *time.Time         `json:"started_at"`
	FinishedAt     *time.Time         `json:"finished_at"`
	ElapsedSecs    *float64           `json:"elapsed_secs"`
	RecordsWritten int64              `json:"records_written"`
	Invocations    []InvocationRecord `json:"invocations"`
	Error          *string            `json:"error"`
	IdempotencyKey *string            `json:"idempotency_key"`
	DoctorReport   json.RawMessage    `json:"doctor_report,omitempty"`
	Attempt        int                `json:"attempt"`
	// TemplateID and TemplateVersion name the template version the run was
	// triggered from; both nil for a run submitted as a config.
	TemplateID      *string `json:"template_id,omitempty"`
	TemplateVersion *int    `json:"template_version,omitempty"`

	// ConfigBody is the raw submitted config (cluster runs only), stored
	// uninterpolated so no resolved secret is ever persisted.
	ConfigBody   *string         `json:"config_body,omitempty"`
	ConfigFormat *string         `json:"config_format,omitempty"`
	TimeoutSecs  *int64          `json:"timeout_secs,omitempty"`
	Clock        *string         `json:"clock,omitempty"`
	Concurrency  *int            `json:"concurrency,omitempty"`
	Callback     json.RawMessage `json:"callback,omitempty"`
	// ReplayOf is the dead-letter file a replay run feeds its sink from.
	ReplayOf *string `json:"replay_of,omitempty"`
}

// MarshalJSON writes nil Labels and Invocations as {} and [], the shapes the
// /v1 API requires (both fields are required, non-null in its schema).
func (r RunRecord) MarshalJSON() ([]byte, error) {
	type plain RunRecord
	p := plain(r)
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	if p.Invocations == nil {
		p.Invocations = []InvocationRecord{}
	}
	return json.Marshal(p)
}

// RunFinal is a run's terminal write for Store.RunFinish.
type RunFinal struct {
	// Record is the terminal record; a missing FinishedAt is stamped. Its
	// submission fields are written only when the store lacks the run.
	Record *RunRecord
	// Owned fences the write on this instance owning the run (cluster mode).
	Owned bool
	// Lines are the run's log lines not persisted yet.
	Lines []RunLogLine
	// Cap bounds the run's persisted lines as in RunLogAppend.
	Cap LogCap
	// Outputs are files the run's sinks wrote that are not in the ledger
	// yet: they are recorded in the terminal write's own transaction (as
	// LocalOutputRecord would, one by one), whether or not the fence lets
	// the record land, since the files exist either way.
	Outputs []LocalOutputWrite
}

// ClaimOutcome is the result kind of an idempotency-key claim.
type ClaimOutcome int

// The three outcomes of IdempotencyClaim.
const (
	// ClaimFresh: the key was new (or its previous claim expired); the caller
	// owns it for its run id.
	ClaimFresh ClaimOutcome = iota + 1
	// ClaimReplay: the key is held with the same fingerprint; Claim.RunID is
	// the run to replay.
	ClaimReplay
	// ClaimConflict: the key is held with a different fingerprint.
	ClaimConflict
)

func (o ClaimOutcome) String() string {
	switch o {
	case ClaimFresh:
		return "fresh"
	case ClaimReplay:
		return "replay"
	case ClaimConflict:
		return "conflict"
	}
	return fmt.Sprintf("ClaimOutcome(%d)", int(o))
}

// Claim is the result of an atomic idempotency-key claim.
type Claim struct {
	Outcome ClaimOutcome
	// RunID is the run that holds the key, set for ClaimReplay only. It is
	// empty on ClaimFresh (the caller's own run id now holds the key) and on
	// ClaimConflict: a request with a different payload learns nothing about
	// the run that holds the key, which may belong to another client.
	RunID string
}

// DeleteOutcome is the result of RunDelete.
type DeleteOutcome int

// The outcomes of RunDelete.
const (
	Deleted DeleteOutcome = iota + 1
	DeleteNotFound
	DeleteStillRunning
)

func (o DeleteOutcome) String() string {
	switch o {
	case Deleted:
		return "deleted"
	case DeleteNotFound:
		return "not_found"
	case DeleteStillRunning:
		return "still_running"
	}
	return fmt.Sprintf("DeleteOutcome(%d)", int(o))
}

// ReclaimReport counts what a reclaim pass did with expired leases.
type ReclaimReport struct {
	// Requeued went back to pending with attempt+1.
	Requeued int `json:"requeued"`
	// Poisoned reached the attempt cap and were failed.
	Poisoned int `json:"poisoned"`
}

// PoisonErrorFormat returns the error template every dialect fills in SQL for
// a run or shard (what) failed as poison under a cap of maxAttempts. The
// statement substitutes each row's own counts for the two %s verbs, the
// only verb both Postgres format() and SQLite printf() share: attempt+1,
// the execution whose lease lapsed (a row is started once per attempt,
// attempt counting from 0), then attempt, how often it was requeued before (by reclaim or release).
// Computing the counts per row keeps the text true for a row that was handed
// over by a release past the cap.
func PoisonErrorFormat(what string, maxAttempts int) string {
	return fmt.Sprintf("poison %s: its owner's lease lapsed during attempt %%s (requeue count %%s, cap %d); not retried", what, maxAttempts)
}

// InstanceHeartbeat is what a serve instance writes into the membership table
// on every heartbeat; the instance id is the store's own.
type InstanceHeartbeat struct {
	StartedAt     time.Time
	Listen        string
	MaxConcurrent int
	InFlight      int
	// StateFormat is the newest run-state format this instance reads.
	StateFormat int
}

// InstanceRecord is one cluster member as last heartbeated.
type InstanceRecord struct {
	InstanceID    string    `json:"instance_id"`
	StartedAt     time.Time `json:"started_at"`
	LastHeartbeat time.Time `json:"last_heartbeat"`
	Listen        string    `json:"listen,omitempty"`
	MaxConcurrent int       `json:"max_concurrent"`
	InFlight      int       `json:"in_flight"`
	StateFormat   int       `json:"state_format"`
}

// InstanceWork is one run or shard a cluster member is executing.
type InstanceWork struct {
	// Owner is the member's instance id.
	Owner string
	RunID string
	// ShardID is empty for a whole run.
	ShardID string
	// Name is the run's.
	Name *string
}

// ShardRecord is one source shard of a sharded run as the history holds it.
type ShardRecord struct {
	ShardID string      `json:"shard_id"`
	Status  ShardStatus `json:"status"`
	// Owner is the member executing or last executing the shard; nil before
	// one claimed it.
	Owner          *string    `json:"owner"`
	Attempt        int        `json:"attempt"`
	RecordsWritten int64      `json:"records_written"`
	SizeEstimate   *int64     `json:"size_estimate"`
	Error          *string    `json:"error"`
	FinishedAt     *time.Time `json:"finished_at"`
}

// ShardStatus is the lifecycle state of one source shard of a sharded run.
type ShardStatus string

// Shard states. A shard is cancelled when its parent run was cancelled before
// the shard started.
const (
	ShardPending   ShardStatus = "pending"
	ShardRunning   ShardStatus = "running"
	ShardCompleted ShardStatus = "completed"
	ShardFailed    ShardStatus = "failed"
	ShardCancelled ShardStatus = "cancelled"
)

// Terminal reports whether the shard is done.
func (s ShardStatus) Terminal() bool {
	return s == ShardCompleted || s == ShardFailed || s == ShardCancelled
}

// ShardInsert is one shard of a run expanded into shards (Store.RunShard).
type ShardInsert struct {
	// ShardID is stable and unique within the run, so a re-enumeration after a
	// coordinator crash converges on the same rows.
	ShardID string
	// Descriptor is the connector's opaque shard description, handed back to
	// the source on the worker that claims the shard.
	Descriptor json.RawMessage
	// SizeEstimate drives largest-first claiming; nil when unknown.
	SizeEstimate *int64
}

// ShardKey names one shard of a run.
type ShardKey struct {
	RunID, ShardID string
}

// ClaimedShard is a shard claimed for execution together with its parent run
// record, whose ConfigBody the worker re-loads.
type ClaimedShard struct {
	RunID      string
	ShardID    string
	Descriptor json.RawMessage
	Attempt    int
	Run        RunRecord
}

// ShardResult is the terminal outcome a worker reports for one shard.
type ShardResult struct {
	Status         ShardStatus
	RecordsWritten int64
	Error          *string
	// Lineage is what a completed shard read and wrote (a JSON object the
	// catalog's recorder encodes), kept with the result for the one catalog
	// record of its run; nil when there is none.
	Lineage json.RawMessage
}

// ShardProgress aggregates the shard states of one run.
type ShardProgress struct {
	Total          int   `json:"total"`
	Pending        int   `json:"pending"`
	Running        int   `json:"running"`
	Completed      int   `json:"completed"`
	Failed         int   `json:"failed"`
	Cancelled      int   `json:"cancelled"`
	RecordsWritten int64 `json:"records_written"`
}

// AllTerminal reports whether at least one shard exists and every shard is done,
// i.e. the parent run can be finalized.
func (p ShardProgress) AllTerminal() bool {
	return p.Total > 0 && p.Completed+p.Failed+p.Cancelled == p.Total
}

// Outcome is the terminal status of a sharded run whose shards ended as p
// counts, with its error: failed when any shard failed ("k/n shard(s)
// failed"), else cancelled when any was cancelled, else completed.
func (p ShardProgress) Outcome() (RunStatus, *string) {
	switch {
	case p.Failed > 0:
		msg := fmt.Sprintf("%d/%d shard(s) failed", p.Failed, p.Total)
		return StatusFailed, &msg
	case p.Cancelled > 0:
		return StatusCancelled, nil
	}
	return StatusCompleted, nil
}

// AuditEntry is one control-plane action (or denial) attributed to a principal.
type AuditEntry struct {
	// ID is a time-ordered UUIDv7, also the tie-breaker of the ordering.
	ID                string    `json:"id"`
	Timestamp         time.Time `json:"timestamp"`
	Principal         string    `json:"principal"`
	Role              string    `json:"role"`
	Action            string    `json:"action"`
	RunID             *string   `json:"run_id"`
	ConfigFingerprint *string   `json:"config_fingerprint"`
	SourceIP          *string   `json:"source_ip"`
	// Result is "ok" or "denied".
	Result string `json:"result"`
}

// AuditFilter selects audit entries; every set field must match. Results are
// newest first.
type AuditFilter struct {
	Principal *string
	Action    *string
	Since     *time.Time
	Until     *time.Time
	Limit     int
}

// RunLogLine is one persisted, already redacted log line of a run. Seq is the
// run-scoped monotonic sequence and the pagination key.
type RunLogLine struct {
	Seq   int64     `json:"seq"`
	TS    time.Time `json:"ts"`
	Level string    `json:"level"`
	Line  string    `json:"line"`
}

// LogCap bounds one part of a run's persisted log: of the run's lines whose
// seqs fall in [From, To), only those among the newest Keep seqs are kept. A
// Keep <= 0 keeps every line. How a run's parts share the seqs is the
// caller's layout (server/runlog); the store only applies the bound.
type LogCap struct {
	Keep     int
	From, To int64
}

// RunLogPage is a page of persisted run logs, oldest first. Truncated is true
// when earlier lines of the run were dropped by the per-run cap.
type RunLogPage struct {
	Lines     []RunLogLine `json:"lines"`
	Truncated bool         `json:"truncated"`
}

// ListFilter selects runs for RunList. Statuses are OR-ed; an empty slice means
// every status. Template keeps the runs triggered from that template. Cursor
// is the run id of the last run of the previous page.
type ListFilter struct {
	Statuses []RunStatus
	Name     *string
	Template *string
	Since    *time.Time
	Until    *time.Time
	Limit    int
	Cursor   string
}

// ListPage is one page of RunList, ordered (submitted_at DESC, run_id DESC).
// NextCursor is set exactly when more rows exist.
type ListPage struct {
	Runs       []RunRecord `json:"runs"`
	NextCursor *string     `json:"next_cursor"`
}

// PurgePolicy says how long each kind of history is kept. A zero duration keeps
// that kind forever.
type PurgePolicy struct {
	// TerminalRuns: terminal runs finished longer ago are deleted, together
	// with their shards and logs.
	TerminalRuns time.Duration
	// IdempotencyClaims: claims older than this are deleted.
	IdempotencyClaims time.Duration
	// Instances: membership rows not heartbeated for this long are deleted.
	Instances time.Duration
	// Audit: audit entries older than this are deleted.
	Audit time.Duration
}

// PurgeReport counts the rows a purge removed.
type PurgeReport struct {
	Runs              int `json:"runs"`
	IdempotencyClaims int `json:"idempotency_claims"`
	Instances         int `json:"instances"`
	Shards            int `json:"shards"`
	Audit             int `json:"audit"`
}

// LocalOutput is an entry of the ledger of the files runs wrote.
type LocalOutput struct {
	ID string `json:"id"`
	// Path is the file's absolute path on the server.
	Path      string `json:"path"`
	SizeBytes int64  `json:"size_bytes"`
	// RunID is the run that wrote the file last; FirstRunID the one that
	// wrote it first.
	RunID          string    `json:"run_id"`
	FirstRunID     string    `json:"first_run_id"`
	FirstWrittenAt time.Time `json:"first_written_at"`
	LastWrittenAt  time.Time `json:"last_written_at"`
	// ExistedBefore: a file was at Path before faucet first wrote it.
	ExistedBefore bool `json:"existed_before"`
	// FileID identifies the file faucet wrote last (its device, inode, size
	// and modification time), so a deletion removes exactly that file;
	// empty when unknown.
	FileID    string     `json:"file_id,omitempty"`
	DeletedAt *time.Time `json:"deleted_at"`
}

// LocalOutputWrite is one write of a file by a run.
type LocalOutputWrite struct {
	Path      string
	SizeBytes int64
	RunID     string
	Existed   bool
	FileID    string
	// At is when the write was committed; zero means the store's now.
	At time.Time
}

// LocalOutputFilter selects a page of the ledger.
type LocalOutputFilter struct {
	// RunID keeps the entries whose first or last write was by this run.
	RunID *string
	// PathPrefix keeps the entries whose path starts with it.
	PathPrefix *string
	// Cursor is the last id of the previous page; empty for the first.
	Cursor string
	Limit  int
}

// LocalOutputPage is one page of the ledger.
type LocalOutputPage struct {
	Outputs []LocalOutput
	// NextCursor is set when more entries may follow.
	NextCursor *string
}
