package server

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/plugins/builtin"
	"github.com/faucet-dev/faucet/plugins/host"
	"github.com/faucet-dev/faucet/plugins/sdk"
	"github.com/faucet-dev/faucet/server/admission"
	"github.com/faucet-dev/faucet/server/envpolicy"
	"github.com/faucet-dev/faucet/server/fileroots"
	"github.com/faucet-dev/faucet/server/outputs"
)

// pipelineHost is the pipeline layer as the services see it (admission,
// execution and cluster each declare the part they use): configs load
// against the connector host's catalog and execute through its warm plugin
// processes.
type pipelineHost struct {
	host *host.Host
	// defaults is the --default-config merged under every config; a
	// reload swaps it whole, and a load reads it once, so each config
	// loads against one version.
	defaults atomic.Pointer[[]byte]
	// observe asks the connectors for the datasets they touch, for the
	// catalog.
	observe bool
	// files bounds the paths of a run; env what ${env:NAME} may read.
	files *fileroots.Access
	env   *envpolicy.Policy
	// ledger records the files runs wrote; set once the history is open.
	ledger *outputs.Ledger
}

func newPipelineHost(ctx context.Context, cfg Config, defaults []byte, log *slog.Logger, files *fileroots.Access, env *envpolicy.Policy) (*pipelineHost, error) {
	specs := make([]sdk.Spec, 0, len(builtin.All()))
	for _, c := range builtin.All() {
		specs = append(specs, c.Spec())
	}
	dirs := append(append([]string{}, cfg.PluginDirs...), host.DefaultPluginDirs()...)
	// Each session holds a plugin process; keep enough warm for every run
	// that may execute at once, so trivial runs never wait for a launch.
	h, err := host.New(ctx, host.Options{
		PluginDirs: dirs, Builtins: specs, Env: cfg.PluginEnv, Nice: cfg.PluginNice, Logger: log,
		MaxIdle: max(2, cfg.MaxConcurrentRuns), Files: files.Files,
	})
	if err != nil {
		return nil, fmt.Errorf("start connector host: %w", err)
	}
	p := &pipelineHost{host: h, files: files, env: env, observe: !cfg.NoCatalog}
	p.setDefaults(defaults)
	return p, nil
}

// setDefaults makes defaults the config merged under every config loaded
// from now on; the runs already loaded keep theirs.
func (p *pipelineHost) setDefaults(defaults []byte) { p.defaults.Store(&defaults) }

// Close stops every plugin process.
func (p *pipelineHost) Close() error { return p.host.Close() }

// Catalog is the connector catalog the API's schema routes show.
func (p *pipelineHost) Catalog() pipeline.Catalog { return p.host }

// Load loads a config as a template registers it: at the present instant.
func (p *pipelineHost) Load(config []byte, format string) (*pipeline.Plan, error) {
	return p.LoadAt(config, format, time.Time{})
}

// LoadAt loads a run's config at the run's clock; a zero now is the present.
func (p *pipelineHost) LoadAt(config []byte, format string, now time.Time) (*pipeline.Plan, error) {
	return p.loadWith(config, format, now, *p.defaults.Load())
}

// loadWith is LoadAt over defaults instead of the defaults in force: a
// reload checks the triggers' configs against the defaults it swaps in.
func (p *pipelineHost) loadWith(config []byte, format string, now time.Time, defaults []byte) (*pipeline.Plan, error) {
	return pipeline.Load(config, pipeline.LoadOptions{
		Format: pipeline.Format(format), Defaults: defaults, Catalog: p.host,
		Env: p.env.Lookup, EnvAllowed: p.env.Allowed, Files: p.files.Check, Now: now,
	})
}

func (p *pipelineHost) Execute(ctx context.Context, runID string, plan *pipeline.Plan, log *slog.Logger, progress func(int64)) ([]pipeline.InvocationResult, error) {
	// The dead-letter file of a run is confined like its sinks' files.
	opts := pipeline.ExecuteOptions{Connectors: p.host, Logger: log, RunID: runID, Files: p.files.Files(), Observe: p.observe}
	if p.ledger != nil {
		opts.Output = func(_ string, f pipeline.OutputFile) { p.ledger.Hold(runID, f, log) }
	}
	if progress != nil {
		opts.Progress = func(pr pipeline.Progress) { progress(pr.Records) }
	}
	return pipeline.Execute(ctx, plan, opts)
}

func (p *pipelineHost) Shardable(source pipeline.ConnectorConfig) bool {
	c, ok := p.host.Lookup(source.Type)
	return ok && c.Source && c.Shardable
}

func (p *pipelineHost) Shards(ctx context.Context, source pipeline.ConnectorConfig, count int) ([]pipeline.SourceShard, error) {
	return p.host.Shards(ctx, source, count)
}

func (p *pipelineHost) IndependentSessions(sink pipeline.ConnectorConfig) bool {
	return p.host.IndependentSessions(sink.Type)
}

func (p *pipelineHost) WriteMode(sink pipeline.ConnectorConfig) string {
	return pipeline.SinkWriteMode(p.host, sink)
}

// Probe runs the Check probe of the source and the sink of every invocation.
// A probe that cannot run at all is a failed check, not an error: the report
// says which connector could not be reached.
func (p *pipelineHost) Probe(ctx context.Context, plan *pipeline.Plan) (admission.DoctorReport, error) {
	rep := admission.DoctorReport{Invocations: make([]admission.DoctorInvocation, 0, len(plan.Invocations))}
	for _, inv := range plan.Invocations {
		di := admission.DoctorInvocation{RowID: inv.RowID, Checks: []admission.DoctorCheck{}}
		for _, side := range []struct {
			role pipeline.Role
			conn pipeline.ConnectorConfig
		}{{pipeline.RoleSource, inv.Source}, {pipeline.RoleSink, inv.Sink}} {
			start := time.Now()
			items, err := p.host.Check(ctx, side.role, side.conn)
			took := time.Since(start).Milliseconds()
			check := admission.DoctorCheck{Role: side.role, Connector: side.conn.Type, Name: "check", OK: true, DurationMS: took}
			switch {
			case err != nil:
				check.OK, check.Message = false, err.Error()
				di.Checks = append(di.Checks, check)
			case len(items) == 0:
				di.Checks = append(di.Checks, check)
			}
			for _, it := range items {
				check.Name, check.OK, check.Message = it.Name, it.OK, it.Message
				di.Checks = append(di.Checks, check)
			}
		}
		rep.Invocations = append(rep.Invocations, di)
	}
	return rep, nil
}
