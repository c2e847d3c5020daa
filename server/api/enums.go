package api

import (
	"github.com/danielgtaylor/huma/v2"

	"github.com/faucet-dev/faucet/db"
)

// The string enums of the wire format. Each is one component of the OpenAPI
// document, referenced by every field and parameter that carries it, so SDK
// generators emit one type per enum instead of one per field.

// RunStatus is a run's lifecycle status.
type RunStatus string

// Schema makes RunStatus the RunStatus component.
func (RunStatus) Schema(r huma.Registry) *huma.Schema {
	return enumComponent(r, "RunStatus",
		"A run's status. pending: stored for any cluster member to claim (cluster mode only); queued: "+
			"admitted to this server's queue; running: executing; sharded: split into source shards that "+
			"execute in parallel, on this server or across a cluster's members; completed, failed, cancelled: terminal.",
		db.StatusPending, db.StatusQueued, db.StatusRunning, db.StatusSharded,
		db.StatusCompleted, db.StatusFailed, db.StatusCancelled)
}

// ShardStatus is the status of one source shard of a sharded run.
type ShardStatus string

// Schema makes ShardStatus the ShardStatus component.
func (ShardStatus) Schema(r huma.Registry) *huma.Schema {
	return enumComponent(r, "ShardStatus",
		"A shard's status. pending: waiting for a member (or, outside a cluster, a slot) to claim it; running: executing; completed, failed, "+
			"cancelled (its run was cancelled before it started): terminal.",
		db.ShardPending, db.ShardRunning, db.ShardCompleted, db.ShardFailed, db.ShardCancelled)
}

// roleSchema describes auth.Role, the principals' role, in the document:
// Config registers it as the schema of auth.Role.
type roleSchema string

// Schema makes auth.Role the Role component.
func (roleSchema) Schema(r huma.Registry) *huma.Schema {
	return enumComponent(r, "Role",
		"A principal's role: viewer reads, operator also submits, cancels and deletes runs and probes configs, "+
			"admin also reads the audit log.",
		"viewer", "operator", "admin")
}

// ConfigFormat is the syntax of a submitted pipeline config.
type ConfigFormat string

// The config formats.
const (
	FormatYAML ConfigFormat = "yaml"
	FormatJSON ConfigFormat = "json"
)

// Schema makes ConfigFormat the ConfigFormat component.
func (ConfigFormat) Schema(r huma.Registry) *huma.Schema {
	return enumComponent(r, "ConfigFormat", "Syntax of a pipeline config.", FormatYAML, FormatJSON)
}

// orYAML is the format of a config submitted without one.
func (f ConfigFormat) orYAML() string {
	if f == "" {
		return string(FormatYAML)
	}
	return string(f)
}

// DLQReason is the stage that dead-lettered a record.
type DLQReason string

// Schema makes DLQReason the DLQReason component.
func (DLQReason) Schema(r huma.Registry) *huma.Schema {
	return enumComponent(r, "DLQReason",
		"The stage that dead-lettered a record: partial (a sink refused it on its own), dlq_all, quality, "+
			"schema_drift and contract (the Rust faucet's other stages).",
		"partial", "dlq_all", "quality", "schema_drift", "contract")
}

// ErrorCode is the machine-readable code of an error envelope.
type ErrorCode string

// Schema makes ErrorCode the ErrorCode component.
func (ErrorCode) Schema(r huma.Registry) *huma.Schema {
	return enumComponent(r, "ErrorCode",
		"Machine-readable error code, one per HTTP status: bad_config 400 (malformed input: a config that "+
			"does not load, a malformed body or parameter), unauthorized 401, forbidden 403, not_found 404, "+
			"request_timeout 408 (the body arrived too slowly), conflict 409, payload_too_large 413, "+
			"unsupported_media_type 415, unprocessable 422 (well-formed input that cannot be accepted), "+
			"queue_full 429, internal 500, unavailable 503.",
		allErrorCodes...)
}

// enumComponent registers a string enum as the component name (once) and
// returns a reference to it.
func enumComponent[T ~string](r huma.Registry, name, doc string, values ...T) *huma.Schema {
	if _, ok := r.Map()[name]; !ok {
		enum := make([]any, len(values))
		for i, v := range values {
			enum[i] = string(v)
		}
		r.Map()[name] = &huma.Schema{Type: huma.TypeString, Description: doc, Enum: enum}
	}
	return &huma.Schema{Ref: "#/components/schemas/" + name}
}

// CallbackState is where the delivery of a run's callback stands.
type CallbackState string

// Schema makes CallbackState the CallbackState component.
func (CallbackState) Schema(r huma.Registry) *huma.Schema {
	return enumComponent(r, "CallbackState",
		"Where a callback's delivery stands. pending: not delivered yet (an attempt is in flight, or one is due at "+
			"next_attempt_at); delivered: the target answered 2xx; failed: the target refused it (a 4xx other than 408, "+
			"425 and 429, a redirect, an address the server may not call) or its attempts ran out.",
		db.CallbackPending, db.CallbackDelivered, db.CallbackFailed)
}

// BackfillUnitStatus says whether a backfill's unit has its run.
type BackfillUnitStatus string

// Schema makes BackfillUnitStatus the BackfillUnitStatus component.
func (BackfillUnitStatus) Schema(r huma.Registry) *huma.Schema {
	return enumComponent(r, "BackfillUnitStatus",
		"submitted: the unit has its run (created by this request, or replayed); not_submitted: it has none yet "+
			"(see the unit's error), and posting the same backfill again submits it.",
		"submitted", "not_submitted")
}
