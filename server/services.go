package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/server/admission"
	"github.com/faucet-dev/faucet/server/api"
	"github.com/faucet-dev/faucet/server/audit"
	"github.com/faucet-dev/faucet/server/auth"
	"github.com/faucet-dev/faucet/server/callbacks"
	"github.com/faucet-dev/faucet/server/catalog"
	"github.com/faucet-dev/faucet/server/cluster"
	"github.com/faucet-dev/faucet/server/execution"
	"github.com/faucet-dev/faucet/server/maintenance"
	"github.com/faucet-dev/faucet/server/metrics"
	"github.com/faucet-dev/faucet/server/outputs"
	"github.com/faucet-dev/faucet/server/runlog"
	"github.com/faucet-dev/faucet/server/templates"
	"github.com/faucet-dev/faucet/server/triggers"
)

// services are the run lifecycle's services of one server, wired together.
// Each has its own Config; this is the one place they meet.
type services struct {
	log       *slog.Logger
	logs      *runlog.Hub
	audit     *audit.Recorder
	exec      *execution.Executor
	admission *admission.Service
	// member is the cluster membership, nil outside a cluster; leases
	// keeps this server's own leases outside one, and shards executes its
	// sharded runs there.
	member *cluster.Member
	leases *maintenance.Leases
	shards *cluster.Local
	purger *maintenance.Purger
	// templates is the template registry, whose triggered runs admission
	// admits.
	templates *templates.Service
	// triggers fires the runs of the --triggers file through admission.
	triggers *triggers.Service
	// catalog records what finished runs read and wrote; nil with
	// --no-catalog.
	catalog *catalog.Recorder
	// ledger holds the entries of files runs wrote until their terminal
	// writes carry them; what it still holds at shutdown is written then.
	ledger *outputs.Ledger
	// callbacks delivers the outbox of completion callbacks the history
	// writes with every terminal transition, on any member.
	callbacks *callbacks.Dispatcher
}

// newServices builds the services of a server over store.
func newServices(cfg Config, store db.Store, pipes *pipelineHost, authn *auth.Authenticator, m *metrics.Metrics, log *slog.Logger, listen string) *services {
	s := &services{log: log}
	logCfg := runlog.Config{Logger: log}
	if cfg.LogRetention > 0 && cfg.LogMaxLinesPerRun > 0 {
		logCfg.Store, logCfg.MaxLinesPerRun = store, cfg.LogMaxLinesPerRun
	}
	s.logs = runlog.New(logCfg)
	s.audit = audit.New(audit.Config{Store: store, Logger: log})
	// Every value a config may read from the environment is masked in every
	// run, not only in the run that read it.
	secrets := append(authn.Secrets(), pipes.env.Values()...)
	policy := callbacks.Policy{AllowHosts: cfg.CallbackAllowHosts, Cluster: cfg.Cluster}
	s.callbacks = callbacks.New(callbacks.Config{
		Policy: policy, Secret: []byte(cfg.CallbackSecret), MaxAttempts: cfg.CallbackMaxAttempts,
		AttemptTimeout: cfg.CallbackTimeout, MaxConcurrent: cfg.CallbackMaxConcurrent, Version: api.Version, Logger: log, Metrics: m,
	}, store)
	if !cfg.NoCatalog {
		// A batch of catalog records waits for the runs still executing
		// here, whose records follow (s.exec is set before any run ends).
		busy := func() bool { return s.exec.Stats().InFlight > 0 }
		s.catalog = catalog.New(catalog.Config{Store: store, Metrics: m, Log: log, Secrets: secrets, Busy: busy})
	}
	// A sharded run finalized here with a callback has its delivery due now
	// too, and its one catalog record is made from its shards'.
	parentFinalized := func(ctx context.Context, rec *db.RunRecord, plan *pipeline.Plan) {
		s.callbacks.Finalized(rec)
		if s.catalog != nil {
			s.catalog.RecordSharded(ctx, rec, plan)
		}
	}
	execCfg := execution.Config{
		MaxConcurrent: cfg.MaxConcurrentRuns, Logger: log, Metrics: m,
		// A run finalized here with a callback has its delivery due now:
		// deliver it without waiting for the poll. Recording it in the
		// catalog only queues: the terminal write is done by then, and
		// nothing the catalog does can fail or delay it.
		Finalized: func(ctx context.Context, f execution.Final) {
			s.callbacks.Finalized(&f.Record)
			s.catalog.Record(ctx, &f.Record, f.Plan, f.Results)
		},
	}
	if s.catalog != nil {
		execCfg.ShardLineage = s.catalog.ShardLineage
	}
	if pipes.ledger != nil {
		s.ledger = pipes.ledger
		execCfg.Ledger = pipes.ledger
	}
	maintCfg := maintenance.Config{
		Retention: maintenance.Retention{
			TerminalRuns: cfg.RetainTerminalRuns, IdempotencyClaims: cfg.IdempotencyRetention, Logs: cfg.LogRetention,
		},
		LeaseTTL: cfg.LeaseTTL, Logger: log, Metrics: m,
	}
	if cfg.Cluster {
		// A member gone for a day is not coming back under its id.
		maintCfg.Retention.Members = 24 * time.Hour
	}
	s.purger = maintenance.NewPurger(maintCfg, store)
	var dispatch admission.Dispatcher
	if cfg.Cluster {
		// The member and the executor know each other: a freed slot wakes
		// the claim loop, which executes what it claims on the executor.
		var member *cluster.Member
		execCfg.SlotFreed = func() { member.SlotFreed() }
		s.exec = execution.New(execCfg, store, pipes, s.logs)
		member = cluster.New(cluster.Config{
			Poll: cfg.ClusterPoll, LeaseTTL: cfg.LeaseTTL, MaxAttempts: cfg.ClusterMaxAttempts,
			SplitTimeout: cfg.ProbeTimeout, Listen: listen, Secrets: secrets,
			Leader: []cluster.LeaderDuty{s.purger}, ParentFinalized: parentFinalized, Logger: log, Metrics: m,
		}, store, s.exec, pipes)
		s.member, dispatch = member, member
	} else {
		// The executor offers each run to the shards' executor as it
		// starts, which splits those that asked for shards and executes
		// their shards in the executor's own slots.
		var shards *cluster.Local
		execCfg.Split = func(t *execution.Task, plan *pipeline.Plan) bool { return shards.Split(t, plan) }
		s.exec = execution.New(execCfg, store, pipes, s.logs)
		shards = cluster.NewLocal(cluster.Config{
			Poll: cfg.ClusterPoll, LeaseTTL: cfg.LeaseTTL, MaxAttempts: cfg.ClusterMaxAttempts, SplitTimeout: cfg.ProbeTimeout,
			Secrets: secrets, ParentFinalized: parentFinalized, Logger: log, Metrics: m,
		}, store, s.exec, pipes)
		s.shards = shards
		s.leases = maintenance.NewLeases(maintCfg, store)
		dispatch = s.exec
	}
	s.admission = admission.New(admission.Config{
		MaxQueued: cfg.MaxQueuedRuns, IdempotencyRetention: cfg.IdempotencyRetention, ProbeTimeout: cfg.ProbeTimeout,
		Secrets: secrets, Cluster: cfg.Cluster, CheckCallback: policy.CheckJSON, Logger: log, Metrics: m,
	}, store, pipes, dispatch, s.audit)
	s.templates = templates.New(templates.Config{
		Store: store, Loader: pipes, Clustered: cfg.Cluster, Log: log, Submitter: templates.SubmitFunc(s.submitTemplateRun),
	})
	s.triggers = triggers.New(triggers.Config{
		Store: store, Submitter: triggers.SubmitFunc(s.submitTriggerRun), Metrics: m.NewTriggers(), Log: log,
		Retention: cfg.RetainTerminalRuns,
	})
	return s
}

// membership is the cluster membership the API reports, nil outside one.
func (s *services) membership() api.Membership {
	if s.member == nil {
		return nil
	}
	return s.member
}

// start starts the services, those others depend on first. The purge runs
// on the cluster's leader in a cluster (the member starts it), here
// otherwise. The background duties outlive the runs' shutdown (see stop),
// so ctx is not theirs. The triggers of set (nil: none) start last, once
// their runs can be admitted and executed.
func (s *services) start(ctx context.Context, set *triggers.Set) error {
	bg := context.WithoutCancel(ctx)
	s.catalog.Start()
	for _, start := range []func(context.Context) error{s.logs.Start, s.exec.Start, s.admission.Start, s.callbacks.Start} {
		if err := start(bg); err != nil {
			return err
		}
	}
	var err error
	if s.member != nil {
		err = s.member.Start(bg)
	} else if err = s.leases.Start(bg); err == nil {
		if err = s.purger.Start(bg); err == nil {
			err = s.shards.Start(bg)
		}
	}
	if err != nil {
		return err
	}
	if set != nil {
		s.triggers.Start(bg, set)
	}
	return nil
}

// stop stops the services in reverse order: the triggers and intake first, then claiming,
// then the runs, which get grace to flush (a cluster member's heartbeat
// keeps their leases meanwhile), then the background duties and the log
// flusher.
func (s *services) stop(ctx context.Context, grace time.Duration) {
	s.triggers.Stop()
	s.admission.Stop()
	if s.member != nil {
		s.member.StopClaiming()
	} else {
		s.shards.StopClaiming()
	}
	runCtx, cancel := context.WithTimeout(ctx, grace)
	if err := s.exec.Stop(runCtx); err != nil {
		s.log.Warn("shutdown", "error", err)
	}
	cancel()
	if s.ledger != nil {
		s.ledger.Close()
	}
	// The runs' ends are in the outbox: what is not delivered yet is given
	// back, due, for a peer or the next start.
	s.callbacks.Stop()
	teardown, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if s.member != nil {
		s.member.Stop(teardown)
	} else {
		s.shards.Stop(teardown)
		s.leases.Stop()
		s.purger.Stop()
	}
	s.logs.Stop(teardown)
	// What the runs queued for the catalog as they ended, in what is left
	// of the teardown: a catalog that does not answer costs its records,
	// never the logs' flush.
	s.catalog.Stop(teardown)
}
