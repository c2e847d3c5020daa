package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/server/admission"
	"github.com/faucet-dev/faucet/server/audit"
	"github.com/faucet-dev/faucet/server/auth"
	"github.com/faucet-dev/faucet/server/execution"
)

// Register adds every operation of the API to a (see groups for the
// convention every route follows).
func Register(a huma.API, d *Deps) {
	a.UseMiddleware(d.measure)
	serveDocuments(a)
	g := newGroups(a, d)
	// huma rejects a body that reaches MaxBodyBytes, so allow one byte more
	// than the limit: a body of exactly the limit is accepted.
	maxBody := d.bodyLimit() + 1

	huma.Register(g.public, huma.Operation{
		OperationID: "healthz", Method: http.MethodGet, Path: "/healthz",
		Summary: "Liveness probe", Tags: []string{"health"},
		Description: "200 while the process serves HTTP. Unauthenticated.",
	}, d.healthz)

	huma.Register(g.public, huma.Operation{
		OperationID: "readyz", Method: http.MethodGet, Path: "/readyz",
		Summary: "Readiness probe", Tags: []string{"health"},
		Description: "200 when the server accepts runs; 503 (same body) while the history database is not reached yet " +
			"or does not answer, the run queue is full, or the server is shutting down. Unauthenticated.",
		Responses: map[string]*huma.Response{
			"503": {Description: "Not ready", Content: map[string]*huma.MediaType{
				"application/json": {Schema: a.OpenAPI().Components.Schemas.Schema(reflectType[ReadyStatus](), true, "")},
			}},
		},
	}, d.readyz)

	huma.Register(g.public, huma.Operation{
		OperationID: "metrics", Method: http.MethodGet, Path: "/metrics",
		Summary: "Prometheus metrics", Tags: []string{"health"},
		Description: "Prometheus text exposition of the run, queue and HTTP metrics. Unauthenticated.",
		Responses: map[string]*huma.Response{
			"200": {Description: "Prometheus text exposition", Content: map[string]*huma.MediaType{
				"text/plain": {Schema: &huma.Schema{Type: huma.TypeString}},
			}},
		},
		Errors: []int{http.StatusServiceUnavailable},
	}, d.metrics)

	huma.Register(g.v1, huma.Operation{
		OperationID: "submitRun", Method: http.MethodPost, Path: "/runs",
		Summary: "Submit a pipeline run", Tags: []string{"runs"},
		Description: "Validates the config synchronously (400 with the parse or schema error), then queues the run " +
			"and returns at once; poll GET /v1/runs/{id}. With an idempotency_key, a repeat of the same payload " +
			"returns the existing run (202, replayed: true) and a different payload is 409. A full queue is 429 " +
			"with Retry-After.\n\n" +
			"The body is a JSON SubmitRequest, or the pipeline config itself as YAML (Content-Type application/yaml, " +
			"application/x-yaml or text/yaml) with the request's other fields as query parameters, which only a " +
			"YAML body takes (400 with a JSON one).",
		DefaultStatus: http.StatusAccepted, MaxBodyBytes: maxBody,
		RequestBody: yamlRequestBody("The pipeline config itself, in YAML."),
		Errors:      []int{400, 409, 413, 415, 422, 429, 503},
		Metadata:    map[string]any{metaRole: auth.Operator, metaAction: "run.submit"},
	}, d.submitRun)

	huma.Register(g.v1, huma.Operation{
		OperationID: "listRuns", Method: http.MethodGet, Path: "/runs",
		Summary: "List runs", Tags: []string{"runs"},
		Description: "A page of runs, newest first (submitted_at, then run_id, descending). Pass next_cursor as " +
			"cursor for the next page. A malformed parameter, or a cursor that names no run (one deleted since), is 400.",
		Errors:   []int{400, 503},
		Metadata: map[string]any{metaRole: auth.Viewer},
	}, d.listRuns)

	huma.Register(g.v1, huma.Operation{
		OperationID: "getRun", Method: http.MethodGet, Path: "/runs/{id}",
		Summary: "Get a run", Tags: []string{"runs"},
		Errors:   []int{404, 503},
		Metadata: map[string]any{metaRole: auth.Viewer},
	}, d.getRun)

	huma.Register(g.v1, huma.Operation{
		OperationID: "deleteRun", Method: http.MethodDelete, Path: "/runs/{id}",
		Summary: "Delete a finished run", Tags: []string{"runs"},
		Description:   "Deletes a terminal run with its logs and idempotency claim. 409 while the run is queued or running: cancel it first.",
		DefaultStatus: http.StatusNoContent, Errors: []int{404, 409, 503},
		Metadata: map[string]any{metaRole: auth.Operator, metaAction: "run.delete"},
	}, d.deleteRun)

	huma.Register(g.v1, huma.Operation{
		OperationID: "cancelRun", Method: http.MethodPost, Path: "/runs/{id}/cancel",
		Summary: "Cancel a run", Tags: []string{"runs"},
		Description: "202 when cancellation was requested: a queued run is cancelled at once, a running run stops at its " +
			"next batch boundary after its sink flushed. 200 (no-op) when the run had already finished.",
		DefaultStatus: http.StatusAccepted, Errors: []int{404, 409, 503},
		Responses: map[string]*huma.Response{
			"200": {Description: "Already terminal; nothing to do."},
		},
		Metadata: map[string]any{metaRole: auth.Operator, metaAction: "run.cancel"},
	}, d.cancelRun)

	huma.Register(g.v1, huma.Operation{
		OperationID: "streamRunLogs", Method: http.MethodGet, Path: "/runs/{id}/logs",
		Summary: "Read a run's persisted logs, or stream them (SSE)", Tags: []string{"runs"},
		Description: "With format: the persisted lines with seq > after, oldest first, at most limit. json is a " +
			"LogPage; jsonl is one LogLine object per line plus a trailing {\"truncated\": true} when the per-run " +
			"cap dropped earlier lines; text is one `ts level line` per line.\n\n" +
			"Without format: the server-sent event stream of GET /v1/runs/{id}/logs/stream, kept here for " +
			"faucet clients that read it from this path.",
		Errors: []int{400, 404, 429, 503},
		Responses: map[string]*huma.Response{
			"200": {Description: "A LogPage (format=json), NDJSON (format=jsonl), plain text (format=text), or the event stream (no format).", Content: map[string]*huma.MediaType{
				"application/json":     {Schema: a.OpenAPI().Components.Schemas.Schema(reflectType[LogPage](), true, "")},
				"application/x-ndjson": {Schema: &huma.Schema{Type: huma.TypeString, Description: "One LogLine object per line, oldest first, then {\"truncated\": true} when the per-run cap dropped earlier lines."}},
				"text/plain":           {Schema: &huma.Schema{Type: huma.TypeString, Description: "One `ts level line` per line."}},
				"text/event-stream":    logEventStream(a),
			}},
		},
		Metadata: map[string]any{metaRole: auth.Viewer},
	}, d.streamRunLogs)

	huma.Register(g.v1, huma.Operation{
		OperationID: "followRunLogs", Method: http.MethodGet, Path: "/runs/{id}/logs/stream",
		Summary: "Follow a run's logs (SSE)", Tags: []string{"runs"},
		Description: "A text/event-stream that replays the run's recent lines and follows the live tail until the run " +
			"ends. Events: `log` (data: a LogLine; the SSE id is its seq, so Last-Event-ID resumes), `truncated` " +
			"(data: a LogTruncated; lines were dropped before the reader saw them), `end` (data: a LogEnd; the " +
			"stream closes). Comments (`: keepalive`) keep an idle stream open. A server holds a bounded number " +
			"of streams, per run and in all; past them it answers 429 with Retry-After.",
		Errors: []int{400, 404, 429, 503},
		Responses: map[string]*huma.Response{
			"200": {Description: "The event stream.", Content: map[string]*huma.MediaType{
				"text/event-stream": logEventStream(a),
			}},
		},
		Metadata: map[string]any{metaRole: auth.Viewer},
	}, d.followRunLogs)

	huma.Register(g.v1, huma.Operation{
		OperationID: "listAudit", Method: http.MethodGet, Path: "/audit",
		Summary: "Read the audit log", Tags: []string{"audit"},
		Description: "Audited actions (every mutating request and every denial), newest first. Admin only.",
		Errors:      []int{400, 503},
		Metadata:    map[string]any{metaRole: auth.Admin, metaAction: "audit.read"},
	}, d.listAudit)

	huma.Register(g.v1, huma.Operation{
		OperationID: "listSchemas", Method: http.MethodGet, Path: "/schemas",
		Summary: "List the available connectors", Tags: []string{"schemas"},
		Metadata: map[string]any{metaRole: auth.Viewer},
	}, d.listSchemas)

	huma.Register(g.v1, huma.Operation{
		OperationID: "getSchema", Method: http.MethodGet, Path: "/schemas/{kind}/{name}",
		Summary: "Get a connector's config JSON Schema", Tags: []string{"schemas"},
		Errors:   []int{400, 404},
		Metadata: map[string]any{metaRole: auth.Viewer},
	}, d.getSchema)

	huma.Register(g.v1, huma.Operation{
		OperationID: "runDoctor", Method: http.MethodPost, Path: "/doctor",
		Summary: "Validate a config and probe its connectors without running it", Tags: []string{"doctor"},
		Description: "200 with the report when every probe passed; 422 with the report in error.details when one failed; " +
			"400 when the config does not load, with each of its problems in error.details.problems " +
			"({message, path?, line?, column?, file?, set?, rows?}; line and column are 1-based positions in the " +
			"submitted document, absent for a value that did not come from it). The body is a JSON DoctorRequest " +
			"or the config itself as YAML.",
		MaxBodyBytes: maxBody, RequestBody: yamlRequestBody("The pipeline config itself, in YAML."),
		Errors:   []int{400, 413, 415, 422},
		Metadata: map[string]any{metaRole: auth.Operator, metaAction: "doctor"},
	}, d.runDoctor)

	d.registerTemplates(g, maxBody)
	d.registerTriggers(g, maxBody)
	registerCluster(g, d)
	d.registerBackfill(g, maxBody)
	registerOutputs(g, d)
	registerDLQ(g, d)

	huma.Register(g.v1, huma.Operation{
		OperationID: "whoami", Method: http.MethodGet, Path: "/whoami",
		Summary: "Show the calling principal", Tags: []string{"auth"},
		Metadata: map[string]any{metaRole: auth.Viewer},
	}, d.whoami)

	registerCatalog(g, d)
}

// HealthStatus is the body of GET /healthz.
type HealthStatus struct {
	Status string `json:"status" example:"ok"`
}

type healthzOutput struct {
	Body HealthStatus
}

func (d *Deps) healthz(context.Context, *struct{}) (*healthzOutput, error) {
	out := &healthzOutput{}
	out.Body.Status = "ok"
	return out, nil
}

type readyzOutput struct {
	Status int
	Body   ReadyStatus
}

func (d *Deps) readyz(ctx context.Context, _ *struct{}) (*readyzOutput, error) {
	st := d.Admission.Stats()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ready := ReadyStatus{
		HistoryOK: d.Store.Ping(pctx) == nil,
		QueueOK:   st.Queued < st.MaxQueued && !d.Admission.Closing(),
	}
	ready.Cluster.Enabled = d.Cluster != nil
	if ready.HistoryOK && d.Cluster != nil {
		members, err := d.Cluster.Status(pctx)
		ready.Cluster.Instances = members
		ready.HistoryOK = err == nil
	}
	if ready.Cluster.Enabled {
		ready.Cluster.Instance = d.Store.InstanceID()
	}
	if d.Triggers != nil && d.Triggers.Set() != nil {
		ready.Triggers = []TriggerHealth{}
		for _, h := range d.Triggers.Health() {
			ready.Triggers = append(ready.Triggers, TriggerHealth{
				Name: h.Name, Type: h.Type, Healthy: h.Healthy, ConsecutiveFailures: h.ConsecutiveFailures,
				LastFire: utcPtr(h.LastFire), LastError: h.LastError,
			})
		}
	}
	ready.History = HistoryReady
	if !ready.HistoryOK {
		ready.History = HistoryUnavailable
	}
	out := &readyzOutput{Status: http.StatusOK, Body: ready}
	out.Body.Status = "ready"
	if !ready.HistoryOK || !ready.QueueOK {
		out.Status = http.StatusServiceUnavailable
		out.Body.Status = "not_ready"
	}
	return out, nil
}

func (d *Deps) metrics(ctx context.Context, _ *struct{}) (*huma.StreamResponse, error) {
	if d.Metrics == nil {
		return nil, errUnavailable("this process keeps no metrics")
	}
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	d.Metrics.SetHistoryDown(d.Store.Ping(pctx) != nil)
	d.Metrics.SetCluster(d.Admission.Config().Cluster)
	return &huma.StreamResponse{Body: func(ctx huma.Context) {
		r, w := humago.Unwrap(ctx)
		d.Metrics.Handler().ServeHTTP(w, r)
	}}, nil
}

// submitInput is a JSON SubmitRequest, or a YAML config with the request's
// other fields as query parameters, since it has no JSON object to carry them.
type submitInput struct {
	Body SubmitRequest
	// yaml is set when the body is a YAML config (Resolve).
	yaml bool

	Name           string   `query:"name" maxLength:"256" doc:"YAML body only: display name of the run; defaults to the config's name."`
	Labels         []string `query:"label,explode" doc:"YAML body only: a label, as key=value (repeatable)."`
	TimeoutSecs    int64    `query:"timeout_secs" minimum:"1" doc:"YAML body only: cancel the run (status failed) when it executes longer than this."`
	DoctorFirst    bool     `query:"doctor_first" doc:"YAML body only: probe every connector first; false when omitted."`
	IdempotencyKey string   `query:"idempotency_key" maxLength:"256" doc:"YAML body only: see SubmitRequest.idempotency_key."`
	Clock          string   `query:"clock" format:"date-time" doc:"YAML body only: the run's clock (RFC 3339); see SubmitRequest.clock."`
	Concurrency    int      `query:"concurrency" minimum:"1" maximum:"1024" doc:"YAML body only: override execution.max_concurrent."`
}

// submitQueryNames are the query parameters of a YAML submit, which a JSON
// body refuses.
var submitQueryNames = []string{"name", "label", "timeout_secs", "doctor_first", "idempotency_key", "clock", "concurrency"}

// Resolve tells a YAML body from a JSON one, and refuses query fields that a
// JSON body would silently override or ignore.
func (in *submitInput) Resolve(ctx huma.Context) []error {
	in.yaml = isYAMLBody(ctx.Header("Content-Type"))
	if in.yaml {
		return nil
	}
	u := ctx.URL()
	q := u.Query()
	var errs []error
	for _, name := range submitQueryNames {
		if q.Has(name) {
			errs = append(errs, errBadConfig("query parameter "+name+" is only read with a YAML body; set "+name+" in the JSON body", nil))
		}
	}
	return errs
}

// request merges the query fields of a YAML submit into its body.
func (in *submitInput) request() (SubmitRequest, error) {
	b := in.Body
	if !in.yaml {
		return b, nil
	}
	q := in
	if q.Name != "" {
		b.Name = &q.Name
	}
	if len(q.Labels) > 0 {
		b.Labels = make(map[string]string, len(q.Labels))
		for _, kv := range q.Labels {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return b, errBadConfig(fmt.Sprintf("query parameter label: %q is not key=value", kv), nil)
			}
			b.Labels[k] = v
		}
	}
	if q.TimeoutSecs > 0 {
		b.TimeoutSecs = &q.TimeoutSecs
	}
	b.DoctorFirst = q.DoctorFirst
	if q.IdempotencyKey != "" {
		b.IdempotencyKey = &q.IdempotencyKey
	}
	if q.Clock != "" {
		b.Clock = &q.Clock
	}
	if q.Concurrency > 0 {
		b.Concurrency = &q.Concurrency
	}
	return b, nil
}

type submitOutput struct {
	Body SubmitResponse
}

// Bounds of a run's labels; the count is also in the schema.
const (
	MaxLabels          = 64
	MaxLabelKeyBytes   = 128
	MaxLabelValueBytes = 1024
)

// labelsError names the first label past its bounds.
func labelsError(labels map[string]string) error {
	if len(labels) > MaxLabels {
		return errUnprocessable(fmt.Sprintf("labels: %d labels, more than %d", len(labels), MaxLabels), nil)
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch {
		case len(k) > MaxLabelKeyBytes:
			return errUnprocessable(fmt.Sprintf("labels: key %.40q… is longer than %d bytes", k, MaxLabelKeyBytes), nil)
		case len(labels[k]) > MaxLabelValueBytes:
			return errUnprocessable(fmt.Sprintf("labels.%s: value is longer than %d bytes", k, MaxLabelValueBytes), nil)
		}
	}
	return nil
}

func (d *Deps) submitRun(ctx context.Context, in *submitInput) (*submitOutput, error) {
	p := principalFrom(ctx)
	b, err := in.request()
	if err != nil {
		return nil, err
	}
	if err := labelsError(b.Labels); err != nil {
		return nil, err
	}
	who := actor(ctx, p)
	req := admission.Request{
		Config: b.Config, ConfigFormat: b.ConfigFormat.orYAML(), Name: b.Name, Labels: b.Labels,
		TimeoutSecs: b.TimeoutSecs, DoctorFirst: b.DoctorFirst, IdempotencyKey: b.IdempotencyKey,
		Clock: b.Clock, Concurrency: b.Concurrency, Actor: &who,
	}
	if b.Callback != nil {
		// Admission checks it against the egress policy and normalizes it.
		enc, err := json.Marshal(b.Callback)
		if err != nil {
			return nil, errBadConfig("callback: "+err.Error(), nil)
		}
		req.Callback = enc
	}
	res, err := d.Admission.Submit(ctx, req)
	if err != nil {
		return nil, d.serviceError(err)
	}
	return &submitOutput{Body: SubmitResponse{
		RunID: res.RunID, Status: RunStatus(res.Status), SubmittedAt: res.SubmittedAt.UTC(),
		Replayed: res.Replay, Warnings: res.Warnings,
	}}, nil
}

// configProblems lists a rejected config's problems, located, for clients
// that point at them (the console marks each at its line): the details of
// a 400 bad_config, nil when the error carries none.
func configProblems(err error) map[string]any {
	found := pipeline.ConfigProblems(err)
	if len(found) == 0 {
		return nil
	}
	list := make([]map[string]any, len(found))
	for i, p := range found {
		one := map[string]any{"message": p.Message}
		if p.Path != "" {
			one["path"] = p.Path
		}
		if p.Line > 0 {
			one["line"], one["column"] = p.Line, p.Column
		}
		if p.File != "" {
			one["file"] = p.File
		}
		if p.Set != "" {
			one["set"] = p.Set
		}
		if len(p.Rows) > 0 {
			one["rows"] = p.Rows
		}
		list[i] = one
	}
	return map[string]any{"problems": list}
}

// serviceError maps an error of the services to its problem.
func (d *Deps) serviceError(err error) error {
	var cfgErr *admission.ConfigError
	var docErr *admission.DoctorError
	var cbErr *admission.CallbackError
	switch {
	case errors.As(err, &cfgErr):
		return errBadConfig(cfgErr.Error(), configProblems(cfgErr))
	case errors.As(err, &cbErr):
		return errUnprocessable(cbErr.Error(), nil)
	case errors.As(err, &docErr):
		var details map[string]any
		if b, mErr := json.Marshal(toDoctorReport(docErr.Report)); mErr == nil {
			_ = json.Unmarshal(b, &details)
		}
		return errUnprocessable(docErr.Error(), details)
	case errors.Is(err, admission.ErrQueueFull):
		return errQueueFull(int(d.Admission.RetryAfter().Seconds()))
	case errors.Is(err, admission.ErrShuttingDown):
		return errUnavailable("the server is shutting down and accepts no new runs")
	case errors.Is(err, admission.ErrHistoryUnavailable):
		return errUnavailable(err.Error())
	case errors.Is(err, admission.ErrIdempotencyConflict):
		return errConflict("idempotency key reused with a different payload")
	case errors.Is(err, execution.ErrNotFound):
		return errNotFound("run not found")
	case errors.Is(err, db.ErrUnknownCursor):
		return errBadConfig("query parameter cursor names no run: it is not a next_cursor, or its run was deleted since; list again from the first page", nil)
	case errors.Is(err, execution.ErrNotTerminal):
		return errConflict("the run has not finished; cancel it and delete it once it is terminal")
	case errors.Is(err, execution.ErrNotOwned):
		return errConflict(err.Error())
	case isHistoryOutage(err):
		d.logger().Warn("history unavailable", "error", err)
		return errUnavailable("the run history does not answer right now; retry later").WithHeader("Retry-After", "2")
	}
	d.logger().Error("request failed", "error", err)
	return errInternal()
}

type listRunsInput struct {
	Status   []RunStatus `query:"status,explode" doc:"Only runs in these statuses (repeatable)."`
	Name     string      `query:"name" doc:"Only runs with this name."`
	Template string      `query:"template" maxLength:"64" doc:"Only runs triggered from this template (by id)."`
	Since    time.Time   `query:"since" doc:"Only runs submitted at or after this time (RFC 3339)."`
	Until    time.Time   `query:"until" doc:"Only runs submitted before this time (RFC 3339)."`
	Limit    int         `query:"limit" default:"50" minimum:"1" doc:"Page size, at most 500: a larger one is read as 500, as the Rust faucet does."`
	Cursor   string      `query:"cursor" maxLength:"256" doc:"next_cursor of the previous page (the id of its last run)."`
}

// Resolve answers a malformed since or until with 400, as for any bad input.
func (in *listRunsInput) Resolve(ctx huma.Context) []error {
	return timeParamErrors(ctx, "since", "until")
}

// timeParamErrors checks date-time query parameters. huma's own message
// for a bad time.Time parameter names only its location; this one, a Problem
// that takes precedence, shows the format. Parsing matches huma's, so a value
// accepted here is one huma decoded.
func timeParamErrors(ctx huma.Context, names ...string) []error {
	u := ctx.URL()
	q := u.Query()
	var errs []error
	for _, name := range names {
		v := q.Get(name)
		if v == "" {
			continue
		}
		if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
			errs = append(errs, errBadConfig(fmt.Sprintf("query parameter %s: %q is not an RFC 3339 date-time (e.g. 2026-01-31T00:00:00Z)", name, v), nil))
		}
	}
	return errs
}

type listRunsOutput struct {
	Body ListResponse
}

// MaxListLimit is the largest page of GET /v1/runs.
const MaxListLimit = 500

func (d *Deps) listRuns(ctx context.Context, in *listRunsInput) (*listRunsOutput, error) {
	f := db.ListFilter{Limit: min(in.Limit, MaxListLimit), Cursor: in.Cursor}
	for _, s := range in.Status {
		st, err := db.ParseRunStatus(string(s))
		if err != nil {
			return nil, errBadConfig(err.Error(), nil)
		}
		f.Statuses = append(f.Statuses, st)
	}
	f.Name, f.Template, f.Since, f.Until = optString(in.Name), optString(in.Template), optTime(in.Since), optTime(in.Until)
	page, err := d.Runs.List(ctx, f)
	if err != nil {
		return nil, d.serviceError(err)
	}
	out := &listRunsOutput{Body: ListResponse{Runs: make([]RunRecord, len(page.Runs)), NextCursor: page.NextCursor}}
	for i := range page.Runs {
		out.Body.Runs[i] = toRunRecord(&page.Runs[i])
	}
	return out, nil
}

// optString and optTime turn an absent query parameter (the zero value)
// into a nil filter field.
func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

type runIDInput struct {
	ID string `path:"id" doc:"Run id."`
}

type getRunOutput struct {
	Body RunRecord
}

func (d *Deps) getRun(ctx context.Context, in *runIDInput) (*getRunOutput, error) {
	rec, err := d.Runs.Get(ctx, in.ID)
	if err != nil {
		return nil, d.serviceError(err)
	}
	out := &getRunOutput{Body: toRunRecord(rec)}
	if len(rec.Callback) > 0 && rec.Status.Terminal() {
		ds, err := d.Store.CallbackList(ctx, in.ID)
		if err != nil {
			if db.Retriable(err) {
				return nil, errUnavailable("the run history did not answer; retry")
			}
			return nil, fmt.Errorf("read the callback deliveries of run %s: %w", in.ID, err)
		}
		out.Body.CallbackDeliveries = toCallbackDeliveries(ds)
	}
	return out, nil
}

func (d *Deps) deleteRun(ctx context.Context, in *runIDInput) (*struct{}, error) {
	if err := d.Runs.Delete(ctx, in.ID); err != nil {
		return nil, d.serviceError(err)
	}
	d.audit(ctx, principalFrom(ctx), "run.delete", &in.ID, nil, audit.ResultOK)
	return nil, nil
}

type cancelOutput struct {
	Status int
}

func (d *Deps) cancelRun(ctx context.Context, in *runIDInput) (*cancelOutput, error) {
	out, err := d.Runs.Cancel(ctx, in.ID)
	if err != nil {
		return nil, d.serviceError(err)
	}
	d.audit(ctx, principalFrom(ctx), "run.cancel", &in.ID, nil, audit.ResultOK)
	if out == execution.AlreadyTerminal {
		return &cancelOutput{Status: http.StatusOK}, nil
	}
	return &cancelOutput{Status: http.StatusAccepted}, nil
}

type auditInput struct {
	Principal string    `query:"principal" doc:"Only entries of this principal."`
	Action    string    `query:"action" doc:"Only entries of this action."`
	Since     time.Time `query:"since" doc:"Only entries at or after this time (RFC 3339)."`
	Until     time.Time `query:"until" doc:"Only entries before this time (RFC 3339)."`
	Limit     int       `query:"limit" default:"100" minimum:"1" maximum:"1000" doc:"Most entries to return."`
}

// Resolve answers a malformed since or until with 400, as for any bad input.
func (in *auditInput) Resolve(ctx huma.Context) []error {
	return timeParamErrors(ctx, "since", "until")
}

type auditOutput struct {
	Body AuditResponse
}

func (d *Deps) listAudit(ctx context.Context, in *auditInput) (*auditOutput, error) {
	f := db.AuditFilter{
		Limit: in.Limit, Principal: optString(in.Principal), Action: optString(in.Action),
		Since: optTime(in.Since), Until: optTime(in.Until),
	}
	entries, err := d.Store.AuditList(ctx, f)
	if err != nil {
		return nil, d.serviceError(err)
	}
	out := &auditOutput{Body: AuditResponse{Entries: make([]AuditEntry, len(entries))}}
	for i, e := range entries {
		out.Body.Entries[i] = toAuditEntry(e)
	}
	return out, nil
}

type schemasOutput struct {
	Body SchemasResponse
}

func (d *Deps) listSchemas(context.Context, *struct{}) (*schemasOutput, error) {
	out := &schemasOutput{Body: SchemasResponse{
		Sources: d.connectors(pipeline.RoleSource), Sinks: d.connectors(pipeline.RoleSink),
		Transforms: []ConnectorSummary{}, State: []string{},
	}}
	return out, nil
}

func (d *Deps) connectors(role pipeline.Role) []ConnectorSummary {
	out := []ConnectorSummary{}
	if d.Catalog == nil {
		return out
	}
	names := d.Catalog.ConnectorNames(role)
	sort.Strings(names)
	for _, n := range names {
		s := ConnectorSummary{Name: n}
		if raw, ok := d.Catalog.ConnectorSchema(role, n); ok {
			var meta struct {
				Description string `json:"description"`
			}
			if json.Unmarshal(raw, &meta) == nil {
				s.Description = meta.Description
			}
		}
		out = append(out, s)
	}
	return out
}

type schemaInput struct {
	Kind string `path:"kind" enum:"source,sink,transform" doc:"Connector role."`
	Name string `path:"name" doc:"Connector name."`
}

type schemaOutput struct {
	Body map[string]any
}

func (d *Deps) getSchema(_ context.Context, in *schemaInput) (*schemaOutput, error) {
	if d.Catalog == nil || in.Kind == "transform" {
		return nil, errNotFound("no " + in.Kind + " named " + in.Name)
	}
	raw, ok := d.Catalog.ConnectorSchema(pipeline.Role(in.Kind), in.Name)
	if !ok {
		return nil, errNotFound("no " + in.Kind + " named " + in.Name)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, d.serviceError(err)
	}
	return &schemaOutput{Body: schema}, nil
}

type doctorInput struct {
	Body DoctorRequest
}

type doctorOutput struct {
	Body DoctorReport
}

func (d *Deps) runDoctor(ctx context.Context, in *doctorInput) (*doctorOutput, error) {
	// Audited whatever the report says: a probe reaches out to the
	// connectors' systems.
	d.audit(ctx, principalFrom(ctx), "doctor", nil, nil, audit.ResultOK)
	rep, err := d.Admission.Doctor(ctx, in.Body.Config, in.Body.ConfigFormat.orYAML())
	if err != nil {
		return nil, d.serviceError(err)
	}
	if !rep.OK {
		return nil, d.serviceError(&admission.DoctorError{Report: rep})
	}
	return &doctorOutput{Body: toDoctorReport(rep)}, nil
}

type whoamiOutput struct {
	Body Whoami
}

func (d *Deps) whoami(ctx context.Context, _ *struct{}) (*whoamiOutput, error) {
	p := principalFrom(ctx)
	return &whoamiOutput{Body: Whoami{Name: p.Name, Role: p.Role, AuthEnabled: d.Auth.Enabled()}}, nil
}

// The states of the history database in ReadyStatus.History.
const (
	HistoryConnecting  = "connecting"
	HistoryReady       = "ready"
	HistoryUnavailable = "unavailable"
)

// isHistoryOutage reports whether err is a failure of the history database
// that a retry can cure (a stopped server, a dropped connection, a timeout),
// which the client is told as 503 rather than 500.
func isHistoryOutage(err error) bool {
	var dbErr *db.Error
	return errors.As(err, &dbErr) && db.Retriable(err)
}
