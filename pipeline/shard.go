package pipeline

import (
	"context"
	"fmt"
)

// ShardIDFormat names shard i of a split run; the ids sort like the indexes.
const ShardIDFormat = "%05d"

// Sharder is what splitting a run asks of the connectors: which sources
// split, into which shards, and (from the Catalog the config was loaded
// against) how a sink writes. The plugin host implements it.
type Sharder interface {
	Catalog
	ShardPlanner
	// Shardable reports whether the named source connector splits into
	// shards.
	Shardable(source string) bool
	// IndependentSessions reports whether the named sink commits and aborts
	// each of several sessions writing one target at once on its own.
	IndependentSessions(sink string) bool
}

// ShardTraits is what deciding whether a run splits asks of its
// connectors, by their configs. faucet serve's admission answers it for
// submits and claims; SplitShards answers it from a Sharder.
type ShardTraits interface {
	// Shardable reports whether the source splits into shards.
	Shardable(source ConnectorConfig) bool
	// IndependentSessions reports whether the sink commits and aborts each
	// of several sessions writing one target at once on its own.
	IndependentSessions(sink ConnectorConfig) bool
	// WriteMode is the write mode the sink config resolves to (see
	// SinkWriteMode).
	WriteMode(sink ConnectorConfig) string
}

// WholeReason says why plan cannot be split as asked (asked names the
// request in the words its user gave it: "--shards 4", "shard: {count:
// 4}") and executes whole, or returns "" when it can: a matrix, a source
// that does not split, a sink whose sessions do not commit and abort on
// their own (the shards would share one output, and a failed shard could
// take the others' records with it) and a sink that overwrites its target
// (each shard would replace the others' output) run whole.
func WholeReason(plan *Plan, asked string, t ShardTraits) string {
	if len(plan.Invocations) != 1 {
		return fmt.Sprintf("%s splits a single pipeline, and this config has %d matrix rows; the run executes whole", asked, len(plan.Invocations))
	}
	inv := plan.Invocations[0]
	if !t.Shardable(inv.Source) {
		return fmt.Sprintf("%s is ignored: source connector %s cannot be sharded; the run executes whole", asked, inv.Source.Type)
	}
	if !t.IndependentSessions(inv.Sink) {
		return fmt.Sprintf("%s is ignored: sink %s does not commit and abort concurrent sessions on their own (the shards would share one output, and a failed one could take the others' records with it); the run executes whole", asked, inv.Sink.Type)
	}
	if t.WriteMode(inv.Sink) == WriteModeOverwrite {
		return fmt.Sprintf("%s is ignored: sink %s overwrites its target (write_mode overwrite), so each shard would replace the others' output; the run executes whole", asked, inv.Sink.Type)
	}
	return ""
}

// sharderTraits answers ShardTraits from a Sharder, which knows its
// connectors by name.
type sharderTraits struct{ s Sharder }

func (t sharderTraits) Shardable(source ConnectorConfig) bool { return t.s.Shardable(source.Type) }
func (t sharderTraits) IndependentSessions(sink ConnectorConfig) bool {
	return t.s.IndependentSessions(sink.Type)
}
func (t sharderTraits) WriteMode(sink ConnectorConfig) string { return SinkWriteMode(t.s, sink) }

// Split is a plan prepared for sharded execution.
type Split struct {
	// Plan is what to execute: one invocation per source shard, all at
	// once, or the original plan when it runs whole.
	Plan *Plan
	// Note says why a plan that asked for shards runs whole; "" when it was
	// split.
	Note string
}

// SplitShards splits plan's single invocation into count shards of its
// source (fewer when the source has fewer), each executed as an invocation
// of its own: row "<row>/<shard id>", its own sink session, committed on
// its own. Execute runs them in parallel; its results are the shards', and
// the run's records are their sum.
func SplitShards(ctx context.Context, plan *Plan, count int, s Sharder) (Split, error) {
	if count < 2 {
		return Split{Plan: plan}, nil
	}
	if why := WholeReason(plan, fmt.Sprintf("--shards %d", count), sharderTraits{s}); why != "" {
		return Split{Plan: plan, Note: why}, nil
	}
	inv := plan.Invocations[0]
	shards, err := s.Shards(ctx, inv.Source, count)
	if err != nil {
		return Split{}, fmt.Errorf("split the source into shards: %w", err)
	}
	if len(shards) < 2 {
		return Split{Plan: plan, Note: fmt.Sprintf("the source yields %d shard(s); the run executes whole", len(shards))}, nil
	}
	split := *plan
	split.Shard = nil
	split.SplitFrom = inv.RowID
	split.Execution = Execution{MaxConcurrent: len(shards), OnError: OnErrorContinue}
	split.Invocations = make([]Invocation, len(shards))
	for i := range shards {
		split.Invocations[i] = Invocation{
			RowID:       inv.RowID + "/" + fmt.Sprintf(ShardIDFormat, i),
			Source:      inv.Source,
			Sink:        inv.Sink,
			SourceShard: &shards[i],
		}
	}
	return Split{Plan: &split}, nil
}
