package main

import (
	"errors"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	_ "github.com/faucet-dev/faucet/db/postgres"
	_ "github.com/faucet-dev/faucet/db/sqlite"
	"github.com/faucet-dev/faucet/server"
	"github.com/faucet-dev/faucet/server/admission"
	"github.com/faucet-dev/faucet/server/api"
	"github.com/faucet-dev/faucet/server/callbacks"
	"github.com/faucet-dev/faucet/server/execution"
	"github.com/faucet-dev/faucet/server/follow"
	"github.com/faucet-dev/faucet/server/httpguard"
)

func newServeCmd() *cobra.Command {
	var (
		cfg                                                       server.Config
		shutdownSecs, retainSecs, idemSecs, logSecs, callbackSecs int64
		probeSecs                                                 int64
		pollSecs, leaseSecs                                       float64
		logLevel                                                  string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the HTTP control plane: accept pipeline runs, execute them, keep their history",
		Long: `Run faucet's HTTP control plane. With no flags it listens on 127.0.0.1:8080,
keeps its run history in a SQLite file in faucet's data directory, and creates an
admin API token on first start (printed once, stored beside the history file).

With --cluster, several servers share one history database (Postgres, or a
SQLite file on one host): any of them accepts a run, any of them executes it,
the runs of a server that dies are taken over once its lease lapses, and a run
whose config says shard: {count: N} is split into source shards that every
member executes. Execution is then at-least-once: use a keyed sink
(write_mode: upsert) to make a re-executed run idempotent.

Every flag can also be set through the environment: --max-concurrent-runs is
FAUCET_MAX_CONCURRENT_RUNS, and so on. A flag on the command line wins, and a
variable set to the empty string counts as unset.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := flagsFromEnv(cmd.Flags()); err != nil {
				return err
			}
			level, err := parseLogLevel(logLevel)
			if err != nil {
				return err
			}
			cfg.ShutdownGrace = time.Duration(shutdownSecs) * time.Second
			cfg.RetainTerminalRuns = time.Duration(retainSecs) * time.Second
			switch {
			case idemSecs < 0:
				return usageErrorf("--idempotency-retention-secs must not be negative")
			case idemSecs == 0:
				cfg.IdempotencyRetention = server.IdempotencyExpireAtOnce
			default:
				cfg.IdempotencyRetention = time.Duration(idemSecs) * time.Second
			}
			cfg.LogRetention = time.Duration(logSecs) * time.Second
			if callbackSecs <= 0 || cfg.CallbackMaxAttempts <= 0 || cfg.CallbackMaxConcurrent <= 0 {
				return usageErrorf("--callback-timeout-secs, --callback-max-attempts and --callback-max-concurrent must be positive")
			}
			cfg.CallbackTimeout = time.Duration(callbackSecs) * time.Second
			cfg.ProbeTimeout = time.Duration(probeSecs) * time.Second
			if cfg.MCPAllowMutations && !cfg.MCP {
				return usageErrorf("--mcp-allow-mutations allows the mutating tools of the MCP endpoint: pass --mcp too")
			}
			if pollSecs <= 0 || leaseSecs <= 0 {
				return usageErrorf("--cluster-poll-secs and --lease-ttl-secs must be positive")
			}
			cfg.ClusterPoll = time.Duration(pollSecs * float64(time.Second))
			cfg.LeaseTTL = time.Duration(leaseSecs * float64(time.Second))
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			slog.SetDefault(log)
			return settingFlags(server.Run(cmd.Context(), cfg, cmd.ErrOrStderr(), log))
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "listen", server.DefaultListen, "TCP address to serve the API on")
	f.StringVar(&cfg.History, "history", "", "run history: memory, sqlite:PATH, or postgres://… (default: a SQLite file in the data directory)")
	f.StringVar(&cfg.DataDir, "data-dir", server.DefaultDataDir(), "directory of the default history file and the admin token")
	f.StringVar(&cfg.AuthToken, "auth-token", "", "accept this bearer token as the admin principal \"token\"")
	f.StringVar(&cfg.AuthConfig, "auth-config", "", "YAML or JSON file of principals {name, token, role} (roles: viewer, operator, admin; tokens may use ${env:NAME})")
	f.BoolVar(&cfg.NoAuth, "no-auth", false, "serve without authentication: every caller is admin")
	f.IntVar(&cfg.MaxConcurrentRuns, "max-concurrent-runs", execution.DefaultMaxConcurrent(), "runs executing at once")
	f.IntVar(&cfg.MaxQueuedRuns, "max-queued-runs", admission.DefaultMaxQueued, "runs waiting for an execution slot before submits get 429")
	f.StringVar(&cfg.DefaultConfig, "default-config", "", "pipeline config file merged under every submitted config (POST /v1/reload re-reads it)")
	f.StringVar(&cfg.Triggers, "triggers", "", "triggers file: webhook, object_arrival and schedule triggers that start runs (faucet schema triggers prints its JSON Schema; POST /v1/reload re-reads it)")
	f.Int64Var(&cfg.BodyLimitBytes, "body-limit-bytes", api.DefaultBodyLimit, "largest request body accepted (larger: 413)")
	f.Int64Var(&shutdownSecs, "shutdown-grace-secs", int64(server.DefaultShutdownGrace/time.Second), "on SIGTERM, how long running runs may take to flush before they are failed")
	f.Int64Var(&retainSecs, "retain-terminal-runs-secs", int64(server.DefaultRetainTerminalRuns/time.Second), "delete finished runs this long after they finished (0: keep forever)")
	f.Int64Var(&idemSecs, "idempotency-retention-secs", int64(server.DefaultIdempotencyRetention/time.Second), "how long an idempotency key stays claimed (0: it expires at once, so a repeated key submits a new run)")
	f.StringVar(&cfg.CallbackSecret, "callback-secret", "", "sign every completion callback's body with this key (HMAC-SHA256, header Faucet-Signature: sha256=HEX)")
	f.IntVar(&cfg.CallbackMaxAttempts, "callback-max-attempts", callbacks.DefaultMaxAttempts, "attempts of a completion callback's delivery before it is failed; every member of a cluster must use the same")
	f.Int64Var(&callbackSecs, "callback-timeout-secs", int64(callbacks.DefaultAttemptTimeout/time.Second), "limit of one callback attempt, from resolving the target to its answer")
	f.IntVar(&cfg.CallbackMaxConcurrent, "callback-max-concurrent", callbacks.DefaultMaxConcurrent, "callback attempts in flight on this server")
	f.StringSliceVar(&cfg.CallbackAllowHosts, "callback-allow-host", nil, "the only hosts completion callbacks may call (repeatable, or comma-separated); a host named here may be loopback or link-local")
	f.Int64Var(&logSecs, "log-retention-secs", int64(server.DefaultLogRetention/time.Second), "keep persisted run logs this long (0: do not persist run logs)")
	f.IntVar(&cfg.LogMaxLinesPerRun, "log-max-lines-per-run", server.DefaultLogMaxLinesPerRun, "persist at most this many of a run's newest log lines")
	f.Int64Var(&probeSecs, "probe-timeout-secs", int64(server.DefaultProbeTimeout/time.Second), "time limit of doctor probes")
	f.BoolVar(&cfg.NoUI, "no-ui", false, "do not serve the web console at / (the API is unaffected)")
	f.StringSliceVar(&cfg.CORSOrigins, "cors-origin", nil, "browser origin allowed to call the API (repeatable; * for any)")
	f.StringSliceVar(&cfg.PluginDirs, "plugin-dir", nil, "directory of third-party connector plugins (repeatable)")
	f.StringSliceVar(&cfg.PluginEnv, "plugin-env", nil, pluginEnvUsage)
	f.IntVar(&cfg.PluginNice, "plugin-nice", server.DefaultPluginNice, "run connector plugins at this lower CPU priority (nice value, 0-19; 0: the server's own), so the API stays responsive while runs saturate the CPU")
	f.StringArrayVar(&cfg.FileRoots, "file-root", nil, "directory runs may read and write files in (repeatable; FAUCET_FILE_ROOT separated like PATH); a relative path in a config resolves in the first, and / allows any path (default: files/ in the data directory)")
	f.StringArrayVar(&cfg.ConfigEnv, "config-env", nil, "environment variable a config's ${env:NAME} may read: NAME, or PREFIX_* for every name with that prefix (repeatable; no others resolve)")
	f.StringVar(&cfg.EnvFile, "env-file", "", "dotenv file whose variables configs may read too (default: .env in the working directory, when it exists)")
	f.BoolVar(&cfg.NoEnvFile, "no-env-file", false, "read no env file, not even .env in the working directory")
	f.StringVar(&logLevel, "log-level", "info", "server log level: debug, info, warn or error")
	f.BoolVar(&cfg.NoCatalog, "no-catalog", false, "record neither the datasets runs read and write nor their config snapshots (the catalog keeps what it has)")
	f.BoolVar(&cfg.Cluster, "cluster", false, "join the cluster of servers sharing --history (postgres://…, or a sqlite:PATH file on one host)")
	f.Float64Var(&pollSecs, "cluster-poll-secs", server.DefaultClusterPoll.Seconds(), "how often a cluster member looks for runs to claim when nothing wakes it (outside a cluster: how often a server reclaims and finalizes its sharded runs' shards)")
	f.IntVar(&cfg.ClusterMaxAttempts, "cluster-max-attempts", server.DefaultClusterMaxAttempts, "takeovers a run or shard gets after its owner's lease lapses (a shutdown hand-back counts as one); a run that keeps killing its owner executes this many times plus one (4 by default), and the lapse of its last execution fails it as poison")
	f.IntVar(&cfg.MaxConnections, "max-connections", httpguard.DefaultMaxConnections, "HTTP connections open at once; more are answered 503")
	f.IntVar(&cfg.MaxConnectionsPerClient, "max-connections-per-client", httpguard.DefaultMaxConnectionsPerClient, "HTTP connections open at once from one client address; more are answered 503")
	f.IntVar(&cfg.MaxLogFollowers, "max-log-followers", follow.DefaultMaxTotal, "log streams (SSE) open at once; more are answered 429")
	f.IntVar(&cfg.MaxLogFollowersPerRun, "max-log-followers-per-run", follow.DefaultMaxPerRun, "log streams (SSE) of one run open at once; more are answered 429")
	f.BoolVar(&cfg.MCP, "mcp", false, "serve the Model Context Protocol at /mcp (Streamable HTTP), with the API's bearer auth, roles and audit; read-only tools unless --mcp-allow-mutations")
	f.BoolVar(&cfg.MCPAllowMutations, "mcp-allow-mutations", false, "offer the MCP tools that change something (run_pipeline, the template releases); a caller still needs the role the API asks")
	f.Float64Var(&leaseSecs, "lease-ttl-secs", server.DefaultLeaseTTL.Seconds(), "how long a run stays owned by a server that stopped heartbeating; peers take over after it")
	return cmd
}

// serveFlags names the flag of each server.Config field a server error can
// be about.
var serveFlags = map[string]string{
	"AuthToken": "--auth-token", "AuthConfig": "--auth-config", "NoAuth": "--no-auth",
	"Cluster": "--cluster", "DefaultConfig": "--default-config", "Triggers": "--triggers", "LeaseTTL": "--lease-ttl-secs",
	"PluginNice": "--plugin-nice",
}

// settingFlags says a server error about its settings in terms of the flags
// that set them.
func settingFlags(err error) error {
	var se *server.SettingError
	if !errors.As(err, &se) {
		return err
	}
	return errors.New(se.Describe(func(field string) string {
		if flag, ok := serveFlags[field]; ok {
			return flag
		}
		return field
	}))
}
