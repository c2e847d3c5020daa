package runner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/faucet-dev/faucet/pipeline"
)

// shardCount is how many shards a plan's run is split into in cluster Mode
// B: 0 when it executes whole, and then why not when it asked for shards.
// Submit and the claiming member decide alike from the same config.
func (r *Runner) shardCount(plan *pipeline.Plan) (count int, whole string) {
	if plan.Shard == nil || plan.Shard.Count < 2 {
		return 0, ""
	}
	n := plan.Shard.Count
	if !r.cfg.Cluster {
		return 0, fmt.Sprintf("shard: {count: %d} takes effect in cluster mode only (faucet serve --cluster); the run executes whole", n)
	}
	if len(plan.Invocations) != 1 {
		return 0, fmt.Sprintf("shard: {count: %d} splits a single pipeline, and this config has %d matrix rows; the run executes whole", n, len(plan.Invocations))
	}
	inv := plan.Invocations[0]
	if !r.engine.Shardable(inv.Source) {
		return 0, fmt.Sprintf("shard: {count: %d} is ignored: source connector %s cannot be sharded; the run executes whole", n, inv.Source.Type)
	}
	if r.engine.WriteMode(inv.Sink) == "overwrite" {
		return 0, fmt.Sprintf("shard: {count: %d} is ignored: sink %s overwrites its target (write_mode overwrite), so each shard would replace the others' output; the run executes whole", n, inv.Sink.Type)
	}
	return n, ""
}

// warnings are the remarks a submission gets: a shard request that is not
// honoured, and the duplicate writes at-least-once execution can cause. A
// clustered run is re-executed when its owner's lease lapses (a crash, or an
// owner too slow to renew) and a shard when its worker's does; a sink that
// appends then receives some records twice. A keyed sink (write_mode
// upsert) absorbs the repeat, and so does one that overwrites its target,
// unless the run is sharded.
func (r *Runner) warnings(plan *pipeline.Plan) []string {
	var out []string
	shards, whole := r.shardCount(plan)
	if whole != "" {
		out = append(out, whole)
	}
	if !r.cfg.Cluster {
		return out
	}
	var risky []string
	for _, inv := range plan.Invocations {
		mode := r.engine.WriteMode(inv.Sink)
		if mode == "upsert" || (mode == "overwrite" && shards == 0) {
			continue
		}
		desc := inv.Sink.Type
		if mode != "" {
			desc += " (write_mode " + mode + ")"
		}
		if !slices.Contains(risky, desc) {
			risky = append(risky, desc)
		}
	}
	if len(risky) == 0 {
		return out
	}
	scope := "clustered execution"
	if shards > 0 {
		scope = fmt.Sprintf("sharded execution (%d shards)", shards)
	}
	return append(out, fmt.Sprintf("%s is at-least-once: a failover or shard reclaim re-runs work, so sink %s may receive duplicate records; "+
		"write to a keyed sink with write_mode: upsert to make re-execution idempotent", scope, strings.Join(risky, ", ")))
}

// requestWarnings are the remarks on request fields this server accepts and
// records, so idempotency and history stay faithful to the wire format, but
// does not act on. A clock sets the time ${now...} references resolve to in a
// backfill; faucet's pipeline configs have no such references, so the run
// executes exactly as it would without one.
func requestWarnings(req SubmitRequest) []string {
	var out []string
	if len(req.Callback) > 0 {
		out = append(out, "completion callbacks are not delivered by this server version; the callback was stored on the run record only")
	}
	if req.Clock != nil {
		out = append(out, fmt.Sprintf("clock %s is recorded on the run but not applied by this server: pipeline configs have no ${now...} references for it to set", *req.Clock))
	}
	return out
}
