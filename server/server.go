// Package server assembles faucet serve: the run-history store, the
// connector host, the services of the run lifecycle (admission, execution,
// cluster, maintenance, run logs, audit) and the HTTP API; it runs them
// until the context ends, then shuts down gracefully. It wires; the
// services decide.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/plugins/host"
	"github.com/faucet-dev/faucet/server/api"
	"github.com/faucet-dev/faucet/server/auth"
	"github.com/faucet-dev/faucet/server/cluster"
	"github.com/faucet-dev/faucet/server/console"
	"github.com/faucet-dev/faucet/server/dlq"
	"github.com/faucet-dev/faucet/server/envpolicy"
	"github.com/faucet-dev/faucet/server/execution"
	"github.com/faucet-dev/faucet/server/fileroots"
	"github.com/faucet-dev/faucet/server/follow"
	"github.com/faucet-dev/faucet/server/httpguard"
	"github.com/faucet-dev/faucet/server/maintenance"
	"github.com/faucet-dev/faucet/server/mcp"
	"github.com/faucet-dev/faucet/server/metrics"
	"github.com/faucet-dev/faucet/server/outputs"
)

// Config is every setting of faucet serve; the zero value of a field takes
// the default documented on its flag.
type Config struct {
	// Listen is the TCP address to serve on.
	Listen string
	// History is the run-history URL: "" (a SQLite file in DataDir),
	// "memory", "sqlite:PATH" or "postgres://…".
	History string
	// DataDir holds the default history file and the admin token.
	DataDir string

	// AuthToken, AuthConfig and NoAuth select the auth mode; at most one may
	// be set. With none, an admin token is created on first start and reused.
	AuthToken  string
	AuthConfig string
	NoAuth     bool

	MaxConcurrentRuns int
	MaxQueuedRuns     int
	// DefaultConfig is a pipeline config file merged under every submitted
	// config.
	DefaultConfig string
	// Triggers is a triggers file: webhook, object_arrival and schedule
	// triggers that start runs on their own.
	Triggers           string
	BodyLimitBytes     int64
	ShutdownGrace      time.Duration
	RetainTerminalRuns time.Duration
	// IdempotencyRetention is how long an idempotency key stays claimed;
	// zero takes the default, IdempotencyExpireAtOnce keeps none.
	IdempotencyRetention time.Duration
	// CallbackSecret, when set, signs every completion callback's body
	// (HMAC-SHA256, the Faucet-Signature header).
	CallbackSecret string
	// CallbackAllowHosts, when set, are the only hosts a completion
	// callback may call, whatever their address.
	CallbackAllowHosts []string
	// CallbackMaxAttempts bounds a delivery's attempts (every member of a
	// cluster must use the same); CallbackTimeout one attempt;
	// CallbackMaxConcurrent the attempts in flight. Zero takes the
	// callbacks package's defaults.
	CallbackMaxAttempts   int
	CallbackTimeout       time.Duration
	CallbackMaxConcurrent int
	// LogRetention is how long persisted run logs are kept; zero disables
	// persisting them.
	LogRetention      time.Duration
	LogMaxLinesPerRun int
	ProbeTimeout      time.Duration
	// CORSOrigins may call the API from a browser; "*" allows any.
	CORSOrigins []string
	// PluginDirs are searched for third-party connector plugins.
	PluginDirs []string
	// PluginEnv is what plugins get of the environment beyond the minimum a
	// process needs: "NAME=value" as given, a bare "NAME" copied from
	// faucet's own environment (credentials a connector needs, such as
	// PGSSLROOTCERT).
	PluginEnv []string
	// PluginNice is the CPU priority plugins run at below the server's (a
	// nice value; 0 runs them at the server's own), so the API answers
	// promptly while runs keep the CPU busy.
	PluginNice int
	// NoCatalog stops recording what runs read and write (their connectors
	// are not asked) and their config snapshots.
	NoCatalog bool

	// FileRoots bound every path a built-in file connector (and the
	// dead-letter file) opens for a run: a relative path resolves beneath
	// the first, an absolute one must lie beneath one. Empty: a files/
	// directory in DataDir, created on start. "/" lets runs open any path.
	FileRoots []string
	// ConfigEnv are the environment variables a config's ${env:NAME} may
	// read: NAME, or PREFIX_* for every name with that prefix.
	ConfigEnv []string
	// EnvFile is a dotenv file whose variables configs may read too; with
	// neither it nor NoEnvFile, .env in the working directory is read when
	// it exists.
	EnvFile   string
	NoEnvFile bool

	// Cluster makes this server one member of a cluster sharing History
	// (Postgres, or a SQLite file shared by servers on one host).
	Cluster bool
	// ClusterPoll is how often the claim loop looks for work unprompted.
	ClusterPoll time.Duration
	// ClusterMaxAttempts is how many takeovers a run or shard gets: a lease
	// that lapses once its attempt count has reached it fails the run as
	// poison, so a run that kills each owner executes ClusterMaxAttempts+1
	// times.
	ClusterMaxAttempts int
	// LeaseTTL is how long a run stays owned without a heartbeat; peers
	// take over a cluster member's runs this long after it died.
	LeaseTTL time.Duration

	// MaxConnections and MaxConnectionsPerClient cap the HTTP connections
	// open at once, in all and from one client address; the excess is
	// answered 503.
	MaxConnections          int
	MaxConnectionsPerClient int
	// MaxLogFollowers and MaxLogFollowersPerRun cap the log streams (SSE)
	// open at once, in all and of one run; the excess is answered 429.
	MaxLogFollowers       int
	MaxLogFollowersPerRun int

	// MCP serves the Model Context Protocol at /mcp, its tools calling the
	// API as their caller; MCPAllowMutations offers the tools that change
	// something (run a pipeline, register or release a template).
	MCP, MCPAllowMutations bool

	// NoUI turns the web console off: / and the console's routes answer 404
	// like any unknown path.
	NoUI bool
}

// Defaults of Config.
const (
	DefaultListen = "127.0.0.1:8080"
	// IdempotencyExpireAtOnce is the retention of --idempotency-retention-secs
	// 0, as the Rust faucet reads it: the history's resolution, so a key
	// has expired by the time any later submit reads it.
	IdempotencyExpireAtOnce     = time.Microsecond
	DefaultShutdownGrace        = 30 * time.Second
	DefaultRetainTerminalRuns   = 30 * 24 * time.Hour
	DefaultIdempotencyRetention = 24 * time.Hour
	DefaultLogRetention         = 7 * 24 * time.Hour
	DefaultLogMaxLinesPerRun    = 100000
	DefaultProbeTimeout         = 10 * time.Second
	DefaultClusterPoll          = cluster.DefaultPoll
	DefaultClusterMaxAttempts   = cluster.DefaultMaxAttempts
	DefaultLeaseTTL             = db.DefaultLeaseTTL
	DefaultPluginNice           = 10
	historyFileName             = "history.db"
	// RequestReadTimeout bounds the reading of a whole request, body
	// included: a client slower than that is cut off.
	RequestReadTimeout = 30 * time.Second
)

// DefaultDataDir is faucet's data directory: $XDG_DATA_HOME/faucet, or
// ~/.local/share/faucet.
func DefaultDataDir() string {
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "faucet")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "faucet")
	}
	return filepath.Join(os.TempDir(), "faucet")
}

// DefaultHistoryFile is the SQLite file faucet serve keeps its history in
// when --history is not given.
func DefaultHistoryFile(dataDir string) string {
	return filepath.Join(dataDir, historyFileName)
}

// AdminTokenFile is where faucet serve keeps the admin token it creates when
// its history is the default SQLite file in dataDir, so that clients can
// point a user at it.
func AdminTokenFile(dataDir string) string {
	return DefaultHistoryFile(dataDir) + ".token"
}

// errNoLock: this platform cannot lock the history file.
var errNoLock = errors.New("file locking is not supported on this platform")

// Run serves until ctx ends, then shuts down within cfg.ShutdownGrace.
// Messages meant for the operator's eyes only (a new admin token) go to out.
// It wires the services (see ARCHITECTURE.md), starts them in dependency
// order, and stops them in reverse order.
func Run(ctx context.Context, cfg Config, out io.Writer, log *slog.Logger) error {
	cfg = withDefaults(cfg)
	if err := checkConfig(cfg); err != nil {
		return err
	}
	historyURL, historyFile, err := resolveHistory(cfg)
	if err != nil {
		return err
	}
	exclusive := false
	if historyFile != "" {
		// Cluster members share the file and take the lock shared; a server
		// outside the cluster takes it exclusively, so it never mistakes
		// the members' runs for its own crash's orphans.
		unlock, err := lockFile(historyFile+".lock", cfg.Cluster)
		switch {
		case err == nil:
			defer unlock()
			exclusive = !cfg.Cluster
		case !errors.Is(err, errNoLock):
			return err
		}
	}
	env, err := envpolicy.New(envpolicy.Config{Names: cfg.ConfigEnv, EnvFile: cfg.EnvFile, NoEnvFile: cfg.NoEnvFile})
	if err != nil {
		return err
	}
	authn, err := resolveAuth(cfg, historyFile, out, log, env.LookupAny)
	if err != nil {
		return err
	}
	defaults, err := readDefaultConfig(cfg.DefaultConfig)
	if err != nil {
		return err
	}
	files, err := fileAccess(cfg, historyFile, env)
	if err != nil {
		return err
	}

	pipes, err := newPipelineHost(ctx, cfg, defaults, log, files, env)
	if err != nil {
		return err
	}
	defer pipes.Close()
	triggerSet, err := loadTriggers(cfg.Triggers, pipes, defaults)
	if err != nil {
		return err
	}
	m := metrics.New()

	tcp, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	ln := httpguard.Listen(tcp, cfg.MaxConnectionsPerClient, cfg.MaxConnections, func(msg string) []byte {
		b, _ := json.Marshal(api.NewProblem(http.StatusServiceUnavailable, api.CodeUnavailable, msg, nil))
		return b
	})
	// A server whose history answers serves HTTP once it is ready, so a
	// client that saw it listening is served in full. One whose history does
	// not serves HTTP at once all the same: until the history answers, every
	// route but the probes answers 503 and nothing is accepted.
	var handler atomic.Pointer[http.Handler]
	connecting := withCORS(api.Connecting(cfg.Cluster, m), cfg.CORSOrigins)
	handler.Store(&connecting)
	srv := &http.Server{
		Handler: httpguard.CloseUnreadBodies(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			(*handler.Load()).ServeHTTP(w, r)
		})),
		ReadHeaderTimeout: 10 * time.Second,
		// Streams (log followers) lift it once their request is read.
		ReadTimeout: RequestReadTimeout,
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	var httpDone sync.WaitGroup
	serve := sync.OnceFunc(func() {
		httpDone.Go(func() { serveErr <- srv.Serve(ln) })
		// Said plainly on out too, whatever the log level: scripts wait for it.
		fmt.Fprintf(out, "faucet serve: listening on http://%s\n", ln.Addr())
	})
	defer httpDone.Wait()
	stopHTTP := func(grace time.Duration) {
		httpCtx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		if err := srv.Shutdown(httpCtx); err != nil {
			_ = srv.Close()
		}
	}

	opts := db.Options{LeaseTTL: cfg.LeaseTTL}
	first := opts
	first.ConnectBudget = firstConnectBudget
	store, err := db.Open(ctx, historyURL, first)
	if err != nil {
		if fatalHistoryError(err) {
			return fmt.Errorf("open run history: %w", err)
		}
		serve()
		store, err = openHistory(ctx, historyURL, opts, err, serveErr, log)
		if err != nil {
			stopHTTP(time.Second)
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
	defer store.Close()
	// The history database exists now: refuse it by identity too.
	files.Refresh()
	ledger := outputs.New(store, files.Files, log)
	pipes.ledger = ledger
	if !cfg.Cluster {
		// A server outside a cluster fails the runs whose lease lapsed, where
		// the cluster requeues them: the two must not share a history.
		members, err := store.InstanceListLive(ctx, cfg.LeaseTTL)
		if err != nil {
			stopHTTP(time.Second)
			return fmt.Errorf("read cluster membership: %w", err)
		}
		if len(members) > 0 {
			stopHTTP(time.Second)
			return settingError([]string{"Cluster"}, "the history is shared by a faucet serve cluster (%[2]d live members); start this server with %[1]s too", len(members))
		}
	}

	svc := newServices(cfg, store, pipes, authn, m, log, ln.Addr().String())
	if !cfg.Cluster {
		if n, err := maintenance.Recover(ctx, store, exclusive, m, log); err != nil {
			log.Error("recover interrupted runs", "error", err)
		} else if n > 0 {
			log.Warn("runs interrupted by the previous shutdown were marked failed", "runs", n)
		}
	}
	if err := svc.start(ctx, triggerSet); err != nil {
		stopHTTP(time.Second)
		svc.stop(context.Background(), time.Second)
		return err
	}
	mux := http.NewServeMux()
	api.New(mux, &api.Deps{
		Admission: svc.admission, Runs: svc.exec, Cluster: svc.membership(), Audit: svc.audit,
		Store: store, Logs: svc.logs, Auth: authn, Catalog: pipes.Catalog(), Templates: svc.templates,
		Triggers: svc.triggers, Reloader: &reloader{defaultConfig: cfg.DefaultConfig, triggersFile: cfg.Triggers, pipes: pipes, triggers: svc.triggers},
		Follow:  follow.New(store, follow.Options{MaxPerRun: cfg.MaxLogFollowersPerRun, MaxTotal: cfg.MaxLogFollowers, Metrics: m}),
		Metrics: m, Log: log, BodyLimit: cfg.BodyLimitBytes, Ledger: ledger, DLQ: dlq.New(files.Files),
	})
	if cfg.MCP {
		mux.Handle(mcp.Path, mcp.Handler(mcp.HTTPConfig{
			API: mux, Audit: svc.audit, AllowMutations: cfg.MCPAllowMutations, BodyLimit: cfg.BodyLimitBytes, Log: log,
		}))
	}
	fallback := notFound()
	if !cfg.NoUI {
		fallback = console.Handler(fallback)
	}
	mux.Handle("/", fallback)
	ready := withCORS(mux, cfg.CORSOrigins)
	handler.Store(&ready)
	serve()

	log.Info("faucet serve ready", "addr", ln.Addr().String(), "history", store.Dialect(),
		"file_roots", strings.Join(files.Roots(), string(os.PathListSeparator)), "auth", authn.Enabled(), "max_concurrent_runs", svc.exec.Config().MaxConcurrent,
		"max_queued_runs", svc.admission.Config().MaxQueued, "cluster", cfg.Cluster, "instance", store.InstanceID())

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		svc.stop(context.Background(), cfg.ShutdownGrace)
		return fmt.Errorf("serve http: %w", err)
	}

	// Graceful shutdown: stop intake, let running runs flush, fail the rest,
	// keep answering status polls meanwhile, then close the listener. A
	// slice of the grace is kept for the teardown after the runs.
	start := time.Now()
	log.Info("shutting down", "grace", cfg.ShutdownGrace.String())
	reserve := min(2*time.Second, cfg.ShutdownGrace/5)
	svc.stop(context.Background(), cfg.ShutdownGrace-reserve)
	stopHTTP(max(reserve/2, 100*time.Millisecond))
	log.Info("stopped", "took", time.Since(start).Round(time.Millisecond).String())
	return nil
}

// How long the history is tried before HTTP is served without it, and the
// backoff of openHistory between the attempts after.
const (
	firstConnectBudget = time.Second
	historyRetryFirst  = 500 * time.Millisecond
	historyRetryMax    = 10 * time.Second
)

// fatalHistoryError: no retry can cure err (a malformed URL, a schema newer
// than this binary).
func fatalHistoryError(err error) bool {
	return errors.Is(err, db.ErrBadURL) || errors.Is(err, db.ErrSchemaTooNew)
}

// openHistory keeps trying to open the run history after the first attempt
// failed with err, with capped exponential backoff (jittered, so cluster
// members restarted together do not retry in step), until it opens, ctx
// ends, the HTTP server fails, or the failure is one no retry can cure.
// Every other failure is retried, permanent ones too: an operator fixing a
// password or a file's permissions should not have to restart the server.
func openHistory(ctx context.Context, url string, opts db.Options, err error, serveErr <-chan error, log *slog.Logger) (db.Store, error) {
	delay := historyRetryFirst
	for attempt := 1; ; attempt++ {
		if fatalHistoryError(err) {
			return nil, fmt.Errorf("open run history: %w", err)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		wait := delay/2 + rand.N(delay/2+1)
		log.Warn("run history unreachable; answering 503 and retrying", "attempt", attempt,
			"retry_in", wait.Round(time.Millisecond).String(), "transience", db.TransienceOf(err).String(), "error", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case err := <-serveErr:
			t.Stop()
			return nil, fmt.Errorf("serve http: %w", err)
		case <-t.C:
		}
		delay = min(2*delay, historyRetryMax)
		var st db.Store
		if st, err = db.Open(ctx, url, opts); err == nil {
			log.Info("run history reached", "attempts", attempt+1)
			return st, nil
		}
	}
}

// checkConfig refuses a configuration that cannot work.
func checkConfig(cfg Config) error {
	if cfg.PluginNice < 0 || cfg.PluginNice > 19 {
		// A negative value would need privileges and starve the API instead.
		return settingError([]string{"PluginNice"}, "%[1]s must be between 0 and 19 (got %[2]d)", cfg.PluginNice)
	}
	if !cfg.Cluster {
		return nil
	}
	if dialect, dsn, err := db.ParseURL(cfg.History); err == nil && dialect == "sqlite" && (dsn == db.MemoryDSN || strings.HasPrefix(dsn, "file:")) {
		return settingError([]string{"Cluster"}, "%[1]s needs a history its members share: postgres://… (any hosts) or sqlite:PATH (one host); "+
			"an in-memory history is private to one process")
	}
	if cfg.LeaseTTL < time.Second {
		return settingError([]string{"LeaseTTL"}, "%[1]s must be at least 1 (got %[2]s)", cfg.LeaseTTL)
	}
	return nil
}

func withDefaults(cfg Config) Config {
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.DataDir == "" {
		cfg.DataDir = DefaultDataDir()
	}
	if cfg.MaxConcurrentRuns <= 0 {
		cfg.MaxConcurrentRuns = execution.DefaultMaxConcurrent()
	}
	if cfg.BodyLimitBytes <= 0 {
		cfg.BodyLimitBytes = api.DefaultBodyLimit
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = DefaultShutdownGrace
	}
	if cfg.IdempotencyRetention <= 0 {
		cfg.IdempotencyRetention = DefaultIdempotencyRetention
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = DefaultProbeTimeout
	}
	if cfg.ClusterPoll <= 0 {
		cfg.ClusterPoll = DefaultClusterPoll
	}
	if cfg.ClusterMaxAttempts <= 0 {
		cfg.ClusterMaxAttempts = DefaultClusterMaxAttempts
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	return cfg
}

// resolveHistory returns the store URL and, for a local SQLite file, its
// path.
func resolveHistory(cfg Config) (url, file string, err error) {
	url = cfg.History
	if url == "" {
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return "", "", fmt.Errorf("create data directory: %w", err)
		}
		file = DefaultHistoryFile(cfg.DataDir)
		return "sqlite:" + file, file, nil
	}
	dialect, dsn, err := db.ParseURL(url)
	if err != nil {
		return "", "", err
	}
	if dialect == "sqlite" && dsn != db.MemoryDSN && !strings.HasPrefix(dsn, "file:") {
		file, err = filepath.Abs(dsn)
		if err != nil {
			return "", "", fmt.Errorf("resolve history file: %w", err)
		}
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			return "", "", fmt.Errorf("create history directory: %w", err)
		}
	}
	return url, file, nil
}

// fileAccess resolves the file roots and lists the server's own files,
// which no run may open: the history database with its companions, the
// admin token, the auth config, the env file, the default config and the
// triggers file.
func fileAccess(cfg Config, historyFile string, env *envpolicy.Policy) (*fileroots.Access, error) {
	own := append(fileroots.HistoryFiles(historyFile), filepath.Join(cfg.DataDir, adminTokenName), cfg.AuthConfig, env.EnvFile(), cfg.DefaultConfig, cfg.Triggers)
	return fileroots.New(fileroots.Config{
		Roots: cfg.FileRoots, DataDir: cfg.DataDir, ServerFiles: own,
		PluginDirs: append(append([]string{}, cfg.PluginDirs...), host.DefaultPluginDirs()...),
	})
}

// adminTokenName is the admin token file in the data directory of a server
// whose history is not a SQLite file there.
const adminTokenName = "admin.token"

// resolveAuth builds the authenticator of the selected auth mode; tokens in
// an auth config resolve ${env:NAME} with lookup.
func resolveAuth(cfg Config, historyFile string, out io.Writer, log *slog.Logger, lookup func(string) (string, bool)) (*auth.Authenticator, error) {
	modes := 0
	for _, set := range []bool{cfg.AuthToken != "", cfg.AuthConfig != "", cfg.NoAuth} {
		if set {
			modes++
		}
	}
	if modes > 1 {
		return nil, settingError([]string{"AuthToken", "AuthConfig", "NoAuth"}, "choose one of %[1]s, %[2]s and %[3]s")
	}
	switch {
	case cfg.AuthToken != "":
		return auth.Token(cfg.AuthToken)
	case cfg.AuthConfig != "":
		return auth.LoadFile(cfg.AuthConfig, lookup)
	case cfg.NoAuth:
		log.Warn("authentication is OFF (--no-auth): anyone who reaches this address is admin")
		return auth.Disabled(), nil
	}
	path := filepath.Join(cfg.DataDir, adminTokenName)
	if historyFile != "" {
		path = historyFile + ".token"
	}
	token, created, err := auth.EnsureAdminToken(path)
	if err != nil {
		return nil, err
	}
	if created {
		fmt.Fprintf(out, "\nfaucet serve created an admin API token (shown once; stored in %s, mode 0600):\n\n    %s\n\n"+
			"Send it as \"Authorization: Bearer <token>\".\n\n", path, token)
	} else {
		log.Info("using the admin API token stored beside the history", "file", path)
	}
	return auth.Token(token)
}

// notFound answers unknown paths with the API's problem document.
func notFound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := api.NewProblem(http.StatusNotFound, api.CodeNotFound, "no route for "+r.Method+" "+r.URL.Path, nil)
		p.Instance = r.URL.Path
		api.WriteProblem(w, p)
	})
}
