package pipeline

import (
	"context"

	"github.com/faucet-dev/faucet/plugins/connector"
)

// Dataset is one thing a connector session read or wrote (a file, a table,
// a query's result), as the connector reported it at the session's end.
type Dataset struct {
	// Kind is the connector kind ("csv", "postgres").
	Kind string
	// URI names the dataset canonically: no credentials, a file path
	// absolute. The catalog identifies a dataset by it.
	URI string
	// Schema is what the connector observed of the records; nil when it
	// observed nothing.
	Schema *Schema
}

// Schema and Column are the shape of a dataset's records as a connector
// observed it (plugins/connector).
type (
	Schema = connector.Schema
	Column = connector.Column
)

// Observation is what one side of an invocation reported: the datasets it
// touched and the records and bytes it moved (Bytes is 0 when unknown).
type Observation struct {
	Datasets []Dataset
	Records  int64
	Bytes    int64
}

// Lineage is what one invocation read and wrote, for the catalog: its
// source's and its sink's observations. A side whose connector reported
// nothing (one built before it could) has no datasets.
type Lineage struct {
	Source, Sink Observation
}

// SourceObserver is implemented by source sessions, and pipe sessions, that
// can say what their source read once the read ended cleanly. ok is false
// when the source reported nothing.
type SourceObserver interface {
	ObservedSource() (o Observation, ok bool)
}

// SinkObserver is implemented by sink sessions, and pipe sessions, that can
// say what their sink wrote once it committed. ok is false when the sink
// reported nothing.
type SinkObserver interface {
	ObservedSink() (o Observation, ok bool)
}

type observeKey struct{}

// WithObservation returns ctx asking the sessions opened with it to have
// their connectors report the datasets they touch. Asking costs the
// connectors a look at a sample of the records and a description at the
// end, so Execute asks only when ExecuteOptions.Observe is set.
func WithObservation(ctx context.Context) context.Context {
	return context.WithValue(ctx, observeKey{}, true)
}

// ObservationWanted reports whether ctx asks for datasets (WithObservation).
func ObservationWanted(ctx context.Context) bool {
	v, _ := ctx.Value(observeKey{}).(bool)
	return v
}
