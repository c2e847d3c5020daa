package api

import (
	"encoding/json"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/redact"
	"github.com/faucet-dev/faucet/server/admission"
	"github.com/faucet-dev/faucet/server/auth"
)

// SubmitRequest is the body of POST /v1/runs.
type SubmitRequest struct {
	Config         string            `json:"config" minLength:"1" doc:"The pipeline config, YAML or JSON."`
	ConfigFormat   ConfigFormat      `json:"config_format,omitempty" doc:"Format of config; yaml when omitted."`
	Name           *string           `json:"name,omitempty" maxLength:"256" doc:"Display name of the run; defaults to the config's name."`
	Labels         map[string]string `json:"labels,omitempty" maxProperties:"64" doc:"Free-form labels stored on the run record: at most 64, keys of at most 128 bytes, values of at most 1024."`
	TimeoutSecs    *int64            `json:"timeout_secs,omitempty" minimum:"1" nullable:"true" doc:"Cancel the run (status failed) when it executes longer than this; it flushes within a bounded grace."`
	DoctorFirst    bool              `json:"doctor_first,omitempty" doc:"Probe every connector first; a failing probe rejects the submission with 422 and the report. false when omitted."`
	IdempotencyKey *string           `json:"idempotency_key,omitempty" minLength:"1" maxLength:"256" nullable:"true" doc:"Submitting the same key with the same payload returns the existing run; with a different payload, 409."`
	Clock          *string           `json:"clock,omitempty" format:"date-time" doc:"The run's clock (RFC 3339): what ${now}, ${now.date}, ${now:%Y-%m-%d} and the other ${now…} references of the config render, in the offset given. Without it the run's clock is the instant it was submitted. Recorded on the run, so every execution of it (a takeover by another member included) renders the same; part of the idempotency fingerprint."`
	Callback       *CallbackSpec     `json:"callback,omitempty" doc:"Completion callback: the server calls it once the run reaches a terminal status, at least once (retried with backoff, from whichever member finds it due, also for a run failed by crash recovery), under one Faucet-Delivery-Id. Its deliveries are callback_deliveries of GET /v1/runs/{id}."`
	Concurrency    *int              `json:"concurrency,omitempty" minimum:"1" maximum:"1024" doc:"Override execution.max_concurrent: how many invocations run at once."`
}

// CallbackSpec is a run's completion callback.
type CallbackSpec struct {
	URL         string            `json:"url" minLength:"1" maxLength:"2048" doc:"http or https URL to call when the run reaches a terminal status. Loopback, link-local and cloud metadata addresses are refused (also when a name resolves to one at delivery) unless the host is named by the server's --callback-allow-host, which, when set, is the only hosts allowed."`
	Method      string            `json:"method,omitempty" doc:"HTTP method; POST when omitted."`
	Headers     map[string]string `json:"headers,omitempty" maxProperties:"32" doc:"Extra request headers (at most 32, values of at most 4096 bytes; not Content-Type, Host, User-Agent or Faucet-*). A value is literal text or exactly ${env:NAME}, which the delivering server resolves from its environment; a clustered server accepts only ${env:NAME}, since a literal would be stored in clear text in the shared history. Their values are write-only: run records show them as [REDACTED]."`
	ExtraFields map[string]any    `json:"extra_fields,omitempty" doc:"Static fields merged into the callback body (at most 64 KiB); a key the body already has (event, delivery_id, run_id, status, …) is refused."`
	On          []string          `json:"on,omitempty" enum:"completed,failed,cancelled" doc:"Terminal statuses to fire on; empty means all."`
}

// SubmitResponse is the 202 body of POST /v1/runs.
type SubmitResponse struct {
	RunID       string    `json:"run_id" doc:"The run's id (a time-ordered UUIDv7)."`
	Status      RunStatus `json:"status" doc:"Status at submission, or the replayed run's current status."`
	SubmittedAt time.Time `json:"submitted_at"`
	Replayed    bool      `json:"replayed" doc:"true when the idempotency_key matched an earlier submission of the same payload: no new run was created, and run_id is that submission's run."`
	Warnings    []string  `json:"warnings,omitempty" doc:"Non-fatal remarks about the submission."`
}

// InvocationRecord is the outcome of one invocation of a run.
type InvocationRecord struct {
	RowID           string  `json:"row_id" doc:"Matrix row id, or \"default\"."`
	ParentRecordKey *string `json:"parent_record_key" nullable:"true"`
	RunID           string  `json:"run_id,omitempty"`
	RecordsWritten  int64   `json:"records_written"`
	// The records the sink refused, under the config's resilience.poison.
	RecordsDeadLettered int64   `json:"records_dead_lettered,omitempty" doc:"Records the sink refused that were appended to the dead-letter file (resilience.dlq)."`
	RecordsDropped      int64   `json:"records_dropped,omitempty" doc:"Records the sink refused that were dropped (resilience.poison.action drop)."`
	DurationMS          int64   `json:"duration_ms"`
	Error               *string `json:"error" nullable:"true"`
}

// RunRecord is a run as GET /v1/runs/{id} returns it.
type RunRecord struct {
	RunID          string            `json:"run_id"`
	Name           *string           `json:"name" nullable:"true"`
	Labels         map[string]string `json:"labels"`
	Status         RunStatus         `json:"status"`
	SubmittedAt    time.Time         `json:"submitted_at"`
	StartedAt      *time.Time        `json:"started_at" nullable:"true"`
	FinishedAt     *time.Time        `json:"finished_at" nullable:"true"`
	ElapsedSecs    *float64          `json:"elapsed_secs" nullable:"true" doc:"Seconds between start and finish; live while running."`
	RecordsWritten int64             `json:"records_written"`
	// RecordsDeadLettered sums the invocations'.
	RecordsDeadLettered int64              `json:"records_dead_lettered,omitempty" doc:"Records the sinks refused that were appended to the dead-letter file, over every invocation."`
	Invocations         []InvocationRecord `json:"invocations"`
	Error               *string            `json:"error" nullable:"true"`
	IdempotencyKey      *string            `json:"idempotency_key" nullable:"true"`
	DoctorReport        *DoctorReport      `json:"doctor_report,omitempty" doc:"The doctor_first report, when the run was submitted with doctor_first."`
	Attempt             int                `json:"attempt" minimum:"0" doc:"How many times the cluster took the run over from a member that stopped executing it (its lease lapsed, or it handed the run back at shutdown); 0 for a run that never changed hands, and always 0 without --cluster."`
	TimeoutSecs         *int64             `json:"timeout_secs,omitempty"`
	Clock               *string            `json:"clock,omitempty"`
	Callback            *CallbackSpec      `json:"callback,omitempty"`
	ReplayOf            *string            `json:"replay_of,omitempty" doc:"The dead-letter file this run replays (POST /v1/dlq/replay): its records are the ones the file held."`
	// The template version the run was triggered from, when it was; its
	// labels then carry them too (template, template_version).
	TemplateID      *string `json:"template_id,omitempty" doc:"The template the run was triggered from (POST /v1/templates/{id}/runs); the labels template and template_version say so too."`
	TemplateVersion *int    `json:"template_version,omitempty" doc:"The template version the run was triggered from."`
	// CallbackDeliveries are read for one run only (GET /v1/runs/{id}).
	CallbackDeliveries []CallbackDelivery `json:"callback_deliveries,omitempty" doc:"The deliveries of the run's callback (GET /v1/runs/{id} only): one once the run is terminal, when its callback subscribes to the status."`
}

// ListResponse is a page of GET /v1/runs.
type ListResponse struct {
	Runs       []RunRecord `json:"runs"`
	NextCursor *string     `json:"next_cursor" nullable:"true" doc:"Pass as cursor to read the next page; null on the last page."`
}

// AuditEntry is one audited control-plane action.
type AuditEntry struct {
	ID                string    `json:"id" doc:"Time-ordered UUIDv7."`
	Timestamp         time.Time `json:"timestamp"`
	Principal         string    `json:"principal"`
	Role              auth.Role `json:"role"`
	Action            string    `json:"action" doc:"run.submit, run.cancel, run.delete, or the denied operation."`
	RunID             *string   `json:"run_id" nullable:"true"`
	ConfigFingerprint *string   `json:"config_fingerprint" nullable:"true" doc:"sha256 of the submitted config (submit actions)."`
	SourceIP          *string   `json:"source_ip" nullable:"true"`
	Result            string    `json:"result" enum:"ok,denied"`
}

// AuditResponse is the body of GET /v1/audit.
type AuditResponse struct {
	Entries []AuditEntry `json:"entries"`
}

// LogLine is one persisted or live log line of a run.
type LogLine struct {
	Seq   int64     `json:"seq" doc:"Run-scoped sequence number; pass as after to page."`
	TS    time.Time `json:"ts"`
	Level string    `json:"level" enum:"debug,info,warn,error"`
	Line  string    `json:"line"`
}

// DoctorReport is the outcome of probing a config's connectors.
type DoctorReport struct {
	OK          bool               `json:"ok" doc:"true when every probe passed."`
	Invocations []DoctorInvocation `json:"invocations"`
}

// DoctorInvocation is the probes of one invocation (matrix row).
type DoctorInvocation struct {
	RowID  string        `json:"row_id"`
	Checks []DoctorCheck `json:"checks"`
}

// DoctorCheck is one connector probe.
type DoctorCheck struct {
	Role       string `json:"role" enum:"source,sink"`
	Connector  string `json:"connector"`
	Name       string `json:"name,omitempty" doc:"What was probed, e.g. connect or write permission."`
	OK         bool   `json:"ok"`
	Message    string `json:"message,omitempty" doc:"Why the probe failed, or the probe's note."`
	DurationMS int64  `json:"duration_ms"`
}

func toDoctorReport(r admission.DoctorReport) DoctorReport {
	out := DoctorReport{OK: r.OK, Invocations: make([]DoctorInvocation, len(r.Invocations))}
	for i, inv := range r.Invocations {
		checks := make([]DoctorCheck, len(inv.Checks))
		for j, c := range inv.Checks {
			checks[j] = DoctorCheck{Role: string(c.Role), Connector: c.Connector, Name: c.Name, OK: c.OK, Message: c.Message, DurationMS: c.DurationMS}
		}
		out.Invocations[i] = DoctorInvocation{RowID: inv.RowID, Checks: checks}
	}
	return out
}

// LogEnd is the data of the SSE end event: the run finished.
type LogEnd struct {
	RunID  string    `json:"run_id"`
	Status RunStatus `json:"status,omitempty" doc:"The run's terminal status; absent when the history could not be read."`
}

// LogTruncated is the data of the SSE truncated event: lines were dropped
// before this reader saw them.
type LogTruncated struct {
	Reason string `json:"reason" doc:"Which lines were dropped, and where to read them if they still exist."`
}

// LogPage is a page of persisted log lines (format=json).
type LogPage struct {
	Lines     []LogLine `json:"lines" doc:"Lines with seq greater than after, oldest first, at most limit."`
	Truncated bool      `json:"truncated" doc:"true when the per-run cap dropped lines before the oldest one kept."`
	NextAfter int64     `json:"next_after" minimum:"0" doc:"Pass as after to read the lines that follow: the seq of the last line, or this request's after when there are none. A page shorter than limit holds every line persisted so far."`
}

// ConnectorSummary names one connector of the catalog.
type ConnectorSummary struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// SchemasResponse is the connector catalog.
type SchemasResponse struct {
	Sources    []ConnectorSummary `json:"sources"`
	Sinks      []ConnectorSummary `json:"sinks"`
	Transforms []ConnectorSummary `json:"transforms" doc:"Always empty: faucet has no transforms yet."`
	State      []string           `json:"state" doc:"Always empty: faucet has no state stores yet."`
}

// DoctorRequest is the body of POST /v1/doctor.
type DoctorRequest struct {
	Config       string       `json:"config" minLength:"1" doc:"The pipeline config, YAML or JSON."`
	ConfigFormat ConfigFormat `json:"config_format,omitempty" doc:"Format of config; yaml when omitted."`
}

// ReadyStatus is the body of GET /readyz.
type ReadyStatus struct {
	Status    string          `json:"status" enum:"ready,not_ready"`
	HistoryOK bool            `json:"history_ok" doc:"false while the history database does not answer."`
	History   string          `json:"history" enum:"connecting,ready,unavailable" doc:"The history database: connecting (not reached since the server started; it keeps retrying), ready, or unavailable (it stopped answering)."`
	QueueOK   bool            `json:"queue_ok" doc:"false when the run queue is full."`
	Cluster   ClusterStatus   `json:"cluster"`
	Triggers  []TriggerHealth `json:"triggers,omitempty" doc:"Each enabled trigger's health; present only when the server runs with --triggers. An unhealthy trigger does not make the server unready."`
}

// TriggerHealth is how one trigger of the --triggers file fares.
type TriggerHealth struct {
	Name                string     `json:"name"`
	Type                string     `json:"type" enum:"webhook,object_arrival,schedule"`
	Healthy             bool       `json:"healthy" doc:"false after 3 consecutive failures (fires that started no run, looks that failed), until one succeeds."`
	ConsecutiveFailures int        `json:"consecutive_failures"`
	LastFire            *time.Time `json:"last_fire" nullable:"true" doc:"When it last started a run on this server."`
	LastError           *string    `json:"last_error" nullable:"true"`
}

// ClusterStatus is the cluster part of ReadyStatus.
type ClusterStatus struct {
	Enabled   bool   `json:"enabled"`
	Instances int    `json:"instances" doc:"Live cluster members; 0 when cluster mode is off."`
	Instance  string `json:"instance,omitempty" doc:"This member's instance id (the owner the history records for the runs it executes); empty when cluster mode is off."`
}

// Whoami is the calling principal.
type Whoami struct {
	Name        string    `json:"name"`
	Role        auth.Role `json:"role"`
	AuthEnabled bool      `json:"auth_enabled" doc:"false when the server runs with --no-auth."`
}

func toRunRecord(r *db.RunRecord) RunRecord {
	out := RunRecord{
		RunID:           r.RunID,
		Name:            r.Name,
		Labels:          r.Labels,
		Status:          RunStatus(r.Status),
		SubmittedAt:     r.SubmittedAt.UTC(),
		StartedAt:       utcPtr(r.StartedAt),
		FinishedAt:      utcPtr(r.FinishedAt),
		ElapsedSecs:     r.ElapsedSecs,
		RecordsWritten:  r.RecordsWritten,
		Invocations:     make([]InvocationRecord, len(r.Invocations)),
		Error:           r.Error,
		IdempotencyKey:  r.IdempotencyKey,
		Attempt:         r.Attempt,
		TimeoutSecs:     r.TimeoutSecs,
		Clock:           r.Clock,
		TemplateID:      r.TemplateID,
		TemplateVersion: r.TemplateVersion,
		ReplayOf:        r.ReplayOf,
	}
	out.Labels = withTemplateLabels(r, out.Labels)
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for i, inv := range r.Invocations {
		out.Invocations[i] = InvocationRecord{
			RowID: inv.RowID, ParentRecordKey: inv.ParentRecordKey, RunID: inv.RunID,
			RecordsWritten: inv.RecordsWritten, DurationMS: inv.DurationMS, Error: inv.Error,
			RecordsDeadLettered: inv.RecordsDeadLettered, RecordsDropped: inv.RecordsDropped,
		}
		out.RecordsDeadLettered += inv.RecordsDeadLettered
	}
	if len(r.DoctorReport) > 0 {
		var rep admission.DoctorReport
		if json.Unmarshal(r.DoctorReport, &rep) == nil {
			wire := toDoctorReport(rep)
			out.DoctorReport = &wire
		}
	}
	if len(r.Callback) > 0 {
		var cb CallbackSpec
		if json.Unmarshal(r.Callback, &cb) == nil {
			// Callback headers carry credentials (Authorization, API keys)
			// that any viewer of the run would read otherwise.
			for k := range cb.Headers {
				cb.Headers[k] = redact.Mask
			}
			cb.URL = db.RedactURL(cb.URL)
			out.Callback = &cb
		}
	}
	return out
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func toAuditEntry(e db.AuditEntry) AuditEntry {
	return AuditEntry{
		ID: e.ID, Timestamp: e.Timestamp.UTC(), Principal: e.Principal, Role: wireRole(e.Role), Action: e.Action,
		RunID: e.RunID, ConfigFingerprint: e.ConfigFingerprint, SourceIP: e.SourceIP, Result: e.Result,
	}
}

// wireRole is the role an audit entry stores by its wire name.
func wireRole(name string) auth.Role {
	role, _ := auth.ParseRole(name)
	return role
}
