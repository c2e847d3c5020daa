// Package sdk is what a faucet connector author imports. A connector is a
// plain Go value implementing Connector plus Source and/or Sink; its
// program's main is one call, sdk.Serve(connector), which speaks faucet's
// plugin protocol on its behalf. Records travel in batches of JSON objects:
// a source appends them to a BatchWriter, a sink iterates a Batch.
//
// Return Transient(err) for failures worth retrying; log with log/slog. To
// test a connector without faucet, call its methods directly: collect what a
// source reads with NewBatchWriter, and hand a sink's Writer Batches.
package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/faucet-dev/faucet/plugins/connector"
)

// Connector is the one method every connector has: the description faucet
// identifies it by, read once when the plugin starts (it describes the
// connector, not a session). A connector also implements Source, Sink or
// both, and optionally Sharder and Checker.
type Connector interface {
	Spec() Spec
}

// Spec describes a connector to faucet.
type Spec struct {
	// Name is the connector type pipelines refer to ("csv", "postgres"). It
	// must be unique among the connectors faucet finds.
	Name        string
	Version     string
	Description string
	// SourceSchema and SinkSchema are the JSON Schemas of the config each
	// role accepts (set exactly for the roles the connector implements).
	// faucet validates every config against them before anything runs. Mark
	// fields holding secrets with "writeOnly": true so faucet redacts them,
	// and fields holding file paths with "x-faucet-file": "read" (a file
	// the connector reads) or "write" (one it creates or replaces), so
	// faucet serve refuses a path outside its file roots when the config is
	// submitted rather than when the run opens it.
	SourceSchema json.RawMessage
	SinkSchema   json.RawMessage
	// Shardable sources implement Sharder and honour ReadRequest.Shard.
	Shardable bool
	// WriteModes lists the write modes a sink supports, e.g. "append".
	WriteModes []string
	// IndependentSessions sinks commit and abort each of several sessions
	// writing one target at once on its own, as transactions do; faucet
	// splits a run into shards, each a session of its own, only for such
	// sinks. A sink whose abort undoes more than its own session's writes
	// (truncating a file back) must leave it unset.
	IndependentSessions bool
	// RejectsRecords sinks honour a session's RecordPolicy: given one, they
	// refuse a single bad record with Reject (Isolate does the splitting for
	// a transactional sink) instead of failing the session, which is what
	// faucet's dead-letter queue needs.
	RejectsRecords bool
}

// Role is the side of a pipeline a config is meant for.
type Role = connector.Role

// The two roles.
const (
	RoleSource = connector.RoleSource
	RoleSink   = connector.RoleSink
)

// Source produces records.
type Source interface {
	// Read appends the records of the source (or of req.Shard only) to w and
	// returns nil once all are appended; faucet sends what w still holds.
	// Read must return promptly, with ctx.Err(), when ctx is cancelled.
	Read(ctx context.Context, req ReadRequest, w *BatchWriter) error
}

// ReadRequest is what a Read call works on.
type ReadRequest struct {
	// Config is the source's config object, already validated against
	// Spec.SourceSchema.
	Config json.RawMessage
	// Shard limits the read to one of the shards Sharder.Shards returned;
	// nil reads everything.
	Shard *Shard
}

// Sharder is implemented by sources that can be read in parallel parts.
// The union of all shards' records must equal an unsharded read exactly.
type Sharder interface {
	// Shards splits the source into at most count shards.
	Shards(ctx context.Context, config json.RawMessage, count int) ([]Shard, error)
}

// Shard is one part of a split source.
type Shard = connector.Shard

// Sink consumes records.
type Sink interface {
	// Open starts one write session with config, already validated against
	// Spec.SinkSchema.
	Open(ctx context.Context, config json.RawMessage) (Writer, error)
}

// Writer is one write session of a sink. faucet calls Write for each batch,
// in order, then exactly one of Close or Abort.
type Writer interface {
	// Write accepts one batch. Returning nil acknowledges it: the batch will
	// be part of what Close commits. b.Records is only valid during the call.
	Write(ctx context.Context, b Batch) error
	// Close flushes and commits every acknowledged batch. It is called at the
	// end of the stream and also when a run is cancelled, so that the sink
	// holds exactly the batches it acknowledged.
	Close(ctx context.Context) error
	// Abort discards everything written in the session (rolls back a
	// transaction, removes a partial file) after a failed run.
	Abort(ctx context.Context) error
}

// Checker is implemented by connectors that can probe a config
// (connectivity, permissions) without moving data, for faucet's doctor.
type Checker interface {
	Check(ctx context.Context, role Role, config json.RawMessage) ([]CheckItem, error)
}

// CheckItem is the outcome of one probe.
type CheckItem struct {
	// Name says what was probed ("connect", "write permission").
	Name string
	OK   bool
	// Message explains a failure or adds detail to a success.
	Message string
}

type transientError struct{ err error }

func (e transientError) Error() string { return e.err.Error() }
func (e transientError) Unwrap() error { return e.err }

// Transient marks err as transient: the same call may succeed if retried
// (a dropped connection, a lock timeout). faucet retries transient failures
// according to the pipeline's resilience policy and fails fast on the rest.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return transientError{err}
}

// IsTransient reports whether err, or an error it wraps, was marked with
// Transient.
func IsTransient(err error) bool {
	var t transientError
	return errors.As(err, &t)
}

// DecodeConfig decodes a config object into v, rejecting unknown fields, so a
// connector need not repeat what its schema already guarantees.
func DecodeConfig(config json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(config))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode config: %w", err)
	}
	return nil
}
