package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/redact"
	"github.com/faucet-dev/faucet/pipeline"
)

// Pipelines is what admission needs of the pipeline layer and the connector
// host: load a submitted config into a plan, probe a plan's connectors, and
// tell how a plan's connectors would behave if the run were sharded or
// re-executed.
type Pipelines interface {
	// LoadAt validates and interpolates a config ("yaml" or "json") into a
	// plan, its ${now…} references rendering now. Errors describe the bad
	// input (with line and column, or the JSON path) and become 400
	// responses.
	LoadAt(config []byte, format string, now time.Time) (*pipeline.Plan, error)
	// Probe runs every connector's Check probe of plan.
	Probe(ctx context.Context, plan *pipeline.Plan) (DoctorReport, error)
	// ShardTraits tell how the plan's connectors would behave if the run
	// were split.
	pipeline.ShardTraits
}

// LoadPlan loads a run's config the way a submit does: the config loaded at
// the run's clock (now), then the request's overrides applied. A cluster
// member that claims a run re-loads its stored config through it, with its
// own environment, so no resolved secret is ever stored, and with the run's
// recorded clock (RunClock), so it renders the same ${now}. A config that
// does not load is a *ConfigError.
func LoadPlan(p Pipelines, config, format string, concurrency *int, now time.Time) (*pipeline.Plan, error) {
	plan, err := p.LoadAt([]byte(config), format, now)
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	if concurrency != nil {
		plan.Execution.MaxConcurrent = *concurrency
	}
	return plan, nil
}

// Check loads a config as a submit would, without running or probing it: a
// config that does not load is a *ConfigError.
func (s *Service) Check(config, format string) error {
	_, err := LoadPlan(s.pipes, config, format, nil, s.cfg.Clock())
	return err
}

// loadMasked is LoadPlan for a submission: the problems of a config that
// holds secrets (a template's secret params) are masked, as pipeline masks
// the values it resolves itself.
func loadMasked(p Pipelines, req Request, now time.Time) (*pipeline.Plan, error) {
	plan, err := LoadPlan(p, req.Config, req.ConfigFormat, req.Concurrency, now)
	if err != nil && len(req.Secrets) > 0 {
		red := redact.New(req.Secrets)
		for _, prob := range pipeline.ConfigProblems(err) {
			prob.Message = red.String(prob.Message)
		}
	}
	return plan, err
}

// ShardCount is how many shards a plan's run is split into: 0 when it
// executes whole, and then why not when it asked for shards. Submit, the
// claiming member of a cluster and a server outside one decide alike from
// the same config.
func ShardCount(p Pipelines, plan *pipeline.Plan) (count int, whole string) {
	if plan.Shard == nil || plan.Shard.Count < 2 {
		return 0, ""
	}
	n := plan.Shard.Count
	if why := pipeline.WholeReason(plan, fmt.Sprintf("shard: {count: %d}", n), p); why != "" {
		return 0, why
	}
	return n, ""
}

// warnings are the remarks a submission gets: a shard request that is not
// honoured, and the duplicate writes at-least-once execution can cause. A
// clustered run is re-executed when its owner's lease lapses (a crash, or an
// owner too slow to renew) and a shard when its worker's does, in a cluster
// or, after a restart, on a server outside one; a sink that appends then
// receives some records twice. A keyed sink (write_mode upsert) absorbs the
// repeat, and so does one that overwrites its target, unless the run is
// sharded. A whole run outside a cluster is never re-executed.
func warnings(p Pipelines, plan *pipeline.Plan, cluster bool) []string {
	var out []string
	shards, whole := ShardCount(p, plan)
	if whole != "" {
		out = append(out, whole)
	}
	if !cluster && shards == 0 {
		return out
	}
	var risky []string
	for _, inv := range plan.Invocations {
		mode := p.WriteMode(inv.Sink)
		if mode == "upsert" || (mode == pipeline.WriteModeOverwrite && shards == 0) {
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

// RunClock is a run's clock, what its ${now…} references render: the
// submission's clock in the offset it was given, else the instant it was
// submitted. Both are recorded on the run, so every member that loads it
// renders the same.
func RunClock(rec *db.RunRecord) time.Time {
	if rec.Clock != nil {
		if t, err := time.Parse(time.RFC3339Nano, *rec.Clock); err == nil {
			return t
		}
	}
	return rec.SubmittedAt
}
