// Package api is faucet serve's HTTP API: the huma operations of the /v1
// wire format, the one error model, bearer authentication with roles, the
// audit hooks and per-operation metrics. The OpenAPI document is derived
// from these Go types.
package api

import (
	"context"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/server/admission"
	"github.com/faucet-dev/faucet/server/audit"
	"github.com/faucet-dev/faucet/server/auth"
	"github.com/faucet-dev/faucet/server/dlq"
	"github.com/faucet-dev/faucet/server/execution"
	"github.com/faucet-dev/faucet/server/follow"
	"github.com/faucet-dev/faucet/server/metrics"
	"github.com/faucet-dev/faucet/server/outputs"
	"github.com/faucet-dev/faucet/server/runlog"
	"github.com/faucet-dev/faucet/server/templates"
	"github.com/faucet-dev/faucet/server/triggers"
)

// Title and Version of the OpenAPI document. Version is the wire format's,
// not faucet's: it changes only when the API does.
const (
	Title   = "faucet serve — HTTP control plane"
	Version = "1.0.0"
)

// Deps are what the handlers use. Register only reads it when requests
// arrive, so a zero Deps is enough to derive the OpenAPI document.
type Deps struct {
	// Admission accepts runs; Runs reads, cancels and deletes them.
	Admission *admission.Service
	Runs      *execution.Executor
	// Cluster is this server's cluster membership; nil outside a cluster.
	Cluster Membership
	// Audit records the audited actions; nil records them in Store.
	Audit *audit.Recorder
	Store db.Store
	Logs  *runlog.Hub
	// Follow caps the log followers and shares the polling of remote runs.
	Follow  *follow.Hub
	Auth    *auth.Authenticator
	Catalog pipeline.Catalog
	// Templates is the pipeline template registry.
	Templates *templates.Service
	// Triggers fires the webhook triggers of --triggers and reports every
	// trigger's health; nil without the flag.
	Triggers *triggers.Service
	// Reloader serves POST /v1/reload; nil reloads nothing.
	Reloader Reloader
	Metrics  *metrics.Metrics
	// Ledger keeps the files runs wrote (/v1/local-outputs).
	Ledger *outputs.Ledger
	// DLQ reads, replays and discards dead letters (/v1/dlq/*).
	DLQ *dlq.Service
	Log *slog.Logger
	// BodyLimit caps request bodies in bytes; zero means DefaultBodyLimit.
	BodyLimit int64

	// unauthorized rations the audit entries of rejected tokens.
	unauthorized sourceLimiter
}

// Membership is what the readiness probe and the cluster view ask of a
// cluster member.
type Membership interface {
	// Status is how many members heartbeated within the lease.
	Status(ctx context.Context) (members int, err error)
	// Members lists the members that heartbeated within the lease.
	Members(ctx context.Context) ([]db.InstanceRecord, error)
}

// DefaultBodyLimit is the default cap on request bodies.
const DefaultBodyLimit = 4 << 20

// Config is the huma configuration of the API, shared by the server and by
// `faucet openapi`, so both describe the same document.
func Config() huma.Config {
	cfg := huma.DefaultConfig(Title, Version)
	// The /v1 wire format has no $schema member in bodies.
	cfg.CreateHooks = nil
	// Register serves the documents as `faucet openapi` prints them, which
	// huma's own routes would not; its docs page, which loads a viewer from
	// a CDN, goes with them.
	cfg.OpenAPIPath, cfg.DocsPath = "", ""
	cfg.Info.Description = "Submit pipeline runs over HTTP, poll their status, list, cancel and delete them, " +
		"stream their logs, and read the audit log. Every /v1 operation requires a bearer token " +
		"unless the server runs with --no-auth; /healthz, /readyz and /metrics are open.\n\n" +
		"Every error is an RFC 9457 problem document (application/problem+json) that also carries " +
		"faucet's envelope `error: {code, message, details?}`."
	cfg.Info.License = &huma.License{Name: LicenseName, Identifier: LicenseName, URL: LicenseURL}
	cfg.Servers = []*huma.Server{{URL: "http://127.0.0.1:8080", Description: "Default loopback bind"}}
	cfg.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		"bearerAuth": {Type: "http", Scheme: "bearer", Description: "A token from --auth-token, --auth-config, or the admin token file created on first start."},
	}
	cfg.Components.Responses = sharedResponses(cfg.Components.Schemas)
	// DefaultConfig's formats are huma's package-level map: extend a copy.
	cfg.Formats = maps.Clone(cfg.Formats)
	for _, ct := range yamlMediaTypes {
		cfg.Formats[ct] = yamlConfigBody
	}
	cfg.Transformers = append(cfg.Transformers, fillInstance)
	cfg.Components.Schemas.RegisterTypeAlias(reflect.TypeFor[auth.Role](), reflect.TypeFor[roleSchema]())
	return cfg
}

// faucet's license, as the API document states it: its SPDX identifier
// (3.1) and the license text (3.0, which has no identifier).
const (
	LicenseName = "Apache-2.0"
	LicenseURL  = "https://www.apache.org/licenses/LICENSE-2.0"
)

// New returns the API mounted on mux, with every route registered.
func New(mux *http.ServeMux, d *Deps) huma.API {
	a := humago.New(mux, Config())
	Register(a, d)
	return a
}

// principalKey carries the authenticated principal in the request context.
type principalKey struct{}

// principalFrom returns the caller; handlers behind auth always have one.
func principalFrom(ctx context.Context) auth.Principal {
	if p, ok := ctx.Value(principalKey{}).(auth.Principal); ok {
		return p
	}
	return auth.Anonymous
}

// sourceIPKey carries the caller's address for the audit log.
type sourceIPKey struct{}

func sourceIPFrom(ctx context.Context) *string {
	if s, ok := ctx.Value(sourceIPKey{}).(string); ok && s != "" {
		return &s
	}
	return nil
}

// actor is who calls, as the audit log names them.
func actor(ctx context.Context, p auth.Principal) audit.Actor {
	return audit.Actor{Principal: p.Name, Role: p.Role.String(), SourceIP: sourceIPFrom(ctx)}
}

// audit records an action of the caller on runID (nil: on no run), with
// the fingerprint of the config it concerns (nil: none).
func (d *Deps) audit(ctx context.Context, p auth.Principal, action string, runID, fingerprint *string, result string) {
	d.recorder().Record(ctx, actor(ctx, p), audit.Action{Name: action, RunID: runID, Fingerprint: fingerprint, Result: result})
}

func (d *Deps) recorder() *audit.Recorder {
	if d.Audit == nil {
		d.Audit = audit.New(audit.Config{Store: d.Store, Logger: d.logger()})
	}
	return d.Audit
}

func (d *Deps) logger() *slog.Logger {
	if d.Log == nil {
		return slog.Default()
	}
	return d.Log
}

// measure records every operation's latency and status.
func (d *Deps) measure(ctx huma.Context, next func(huma.Context)) {
	start := time.Now()
	op := ctx.Operation()
	defer func() {
		if d.Metrics != nil {
			d.Metrics.ObserveHTTP(op.OperationID, op.Path, op.Method, statusText(ctx.Status()), time.Since(start))
		}
	}()
	if host, _, err := net.SplitHostPort(ctx.RemoteAddr()); err == nil {
		ctx = huma.WithValue(ctx, sourceIPKey{}, host)
	}
	next(ctx)
}

// authorize authenticates the caller of a /v1 operation and checks its role
// against the operation's, auditing denials.
func (d *Deps) authorize(a huma.API) func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		op := ctx.Operation()
		need, _ := op.Metadata[metaRole].(auth.Role)
		action, _ := op.Metadata[metaAction].(string)
		if action == "" {
			action = op.Method + " " + op.Path
		}
		p, ok := d.Auth.Authenticate(ctx.Header("Authorization"))
		if !ok {
			source := ""
			if s := sourceIPFrom(ctx.Context()); s != nil {
				source = *s
			}
			if d.unauthorized.allow(source) {
				// The wire format's roles and results: the lowest role, denied.
				d.audit(ctx.Context(), auth.Principal{Name: "anonymous", Role: auth.Viewer}, action, nil, nil, audit.ResultDenied)
			}
			ctx.SetHeader("WWW-Authenticate", `Bearer realm="faucet"`)
			_ = huma.WriteErr(a, ctx, http.StatusUnauthorized, "missing or invalid bearer token")
			return
		}
		if !p.Role.Allows(need) {
			var runID *string
			if id := ctx.Param("id"); id != "" && strings.HasPrefix(op.Path, "/v1/runs/") {
				runID = &id
			}
			d.audit(ctx.Context(), p, action, runID, nil, audit.ResultDenied)
			_ = huma.WriteErr(a, ctx, http.StatusForbidden,
				"principal "+p.Name+" has role "+p.Role.String()+"; this operation needs "+need.String())
			return
		}
		if err := refuseNUL(ctx, d.bodyLimit()+1); err != nil {
			_ = huma.WriteErr(a, ctx, http.StatusBadRequest, err.Error())
			return
		}
		next(huma.WithValue(ctx, principalKey{}, p))
	}
}

// bodyLimit is the cap on request bodies in bytes.
func (d *Deps) bodyLimit() int64 {
	if d.BodyLimit <= 0 {
		return DefaultBodyLimit
	}
	return d.BodyLimit
}

func statusText(code int) string {
	if code == 0 {
		code = http.StatusOK
	}
	return strconv.Itoa(code)
}
