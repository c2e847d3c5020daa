// Package pipeline loads faucet pipeline configs (YAML or JSON) into a Plan and
// executes a Plan by streaming record batches from a source connector to a
// sink connector.
package pipeline

import (
	"encoding/json"
	"time"
)

// Plan is a loaded, validated and interpolated pipeline config, ready to
// execute: one Invocation per matrix row (or a single one for a plain
// pipeline). Loading produces it; Execute consumes it.
type Plan struct {
	// Name is the config's name, or empty.
	Name string
	// Invocations run in matrix order, at most Execution.MaxConcurrent at once.
	Invocations []Invocation
	Execution   Execution
	// Delivery is the declared delivery guarantee: "at_least_once", the
	// default and the only one faucet keeps (the loader refuses
	// "exactly_once").
	Delivery string
	// Shard asks for the source to be split into Count shards executed in
	// parallel (see SplitShards); nil when the config has no shard block.
	Shard *Shard
	// SplitFrom is the row whose source this plan's invocations are the
	// shards of (SplitShards); empty for a plan that was not split.
	SplitFrom string
	// Retry is how transient connector errors are retried.
	Retry Retry
	// DeadLetter is what happens to a record a sink refuses
	// (resilience.dlq and resilience.poison); nil fails the invocation.
	DeadLetter *DeadLetter
	// Secrets are values that must never appear in logs, records or errors:
	// every interpolated ${env:…} value and every config value the connector's
	// schema marks secret.
	Secrets []string
	// Fingerprint identifies the submitted config for idempotency: the sha256
	// (hex) of the canonical merged config before interpolation, so equal
	// submissions match and no secret from the environment is hashed.
	Fingerprint string
}

// Invocation is one unit of work: a source feeding a sink, with configs fully
// interpolated and validated against the connectors' schemas.
type Invocation struct {
	// RowID is the matrix row id ("default" for a plain pipeline).
	RowID  string
	Source ConnectorConfig
	Sink   ConnectorConfig
	// SourceShard limits the source to one shard (cluster mode, where each
	// shard of a split source runs as its own invocation); nil reads it all.
	SourceShard *SourceShard
	// SinkWriteMode is the write mode the sink config resolves to (see
	// SinkWriteMode). A sink that overwrites its target keeps the previous
	// contents when the run is cancelled, rather than a partial copy.
	SinkWriteMode string
}

// ConnectorConfig names a connector and carries its config object.
type ConnectorConfig struct {
	// Type is the connector name, as its Spec reports it ("csv", "postgres").
	Type   string
	Config json.RawMessage
}

// OnError says what happens to the remaining invocations after one fails.
type OnError string

// The on_error policies.
const (
	OnErrorContinue OnError = "continue"
	OnErrorStop     OnError = "stop"
)

// Execution bounds and orders the invocations of a plan.
type Execution struct {
	// MaxConcurrent invocations run at once; at least 1.
	MaxConcurrent int
	OnError       OnError
}

// Shard is the config's request to split the source into Count shards.
type Shard struct {
	Count int
}

// Retry is the resilience.retry policy for transient connector errors.
// MaxAttempts counts the first try; 1 means no retry.
type Retry struct {
	MaxAttempts int
	// InitialBackoff doubles after each failed attempt up to MaxBackoff.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
}

// PoisonAction is what becomes of a record a sink keeps refusing.
type PoisonAction string

// The poison actions.
const (
	// PoisonDLQ appends the record to the dead-letter file.
	PoisonDLQ PoisonAction = "dlq"
	// PoisonDrop discards the record, counting it.
	PoisonDrop PoisonAction = "drop"
	// PoisonFail fails the invocation at the first refused record; its sink
	// rolls back, as without a poison policy.
	PoisonFail PoisonAction = "fail"
)

// DeadLetter is the resilience.dlq and resilience.poison policy.
type DeadLetter struct {
	// Path is the dead-letter file (JSON Lines, appended to); set when
	// Action is PoisonDLQ.
	Path string
	// MaxRowAttempts counts the tries of a refused record on its own.
	MaxRowAttempts int
	Action         PoisonAction
}

// InvocationResult is the outcome of one invocation.
type InvocationResult struct {
	RowID string
	// RecordsWritten is the number of records the sink committed: every
	// acknowledged record on success and on cancellation, none after a
	// failure the sink rolled back or a cancelled overwrite (ErrTargetKept).
	RecordsWritten int64
	// RecordsDeadLettered and RecordsDropped count the records the sink
	// refused that went to the dead-letter file, or were dropped, under
	// the plan's DeadLetter policy.
	RecordsDeadLettered int64
	RecordsDropped      int64
	Duration            time.Duration
	// Err is nil on success.
	Err error
	// Lineage is what the invocation's connectors reported they read and
	// wrote, when ExecuteOptions.Observe asked and the invocation
	// succeeded; nil otherwise.
	Lineage *Lineage
}
