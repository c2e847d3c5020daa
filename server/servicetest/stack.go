package servicetest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
	_ "github.com/faucet-dev/faucet/db/sqlite" // the histories are SQLite files
	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/server/admission"
	"github.com/faucet-dev/faucet/server/audit"
	"github.com/faucet-dev/faucet/server/cluster"
	"github.com/faucet-dev/faucet/server/execution"
	"github.com/faucet-dev/faucet/server/metrics"
	"github.com/faucet-dev/faucet/server/runlog"
)

// Store is a real store whose calls a test can make fail.
type Store struct {
	db.Store
	// FailGets fails RunGet.
	FailGets atomic.Bool
	// FailSubmits fails this many RunSubmit calls, transiently when
	// Transient is set.
	FailSubmits atomic.Int32
	Transient   atomic.Bool
	// NoRenew fails the renewal of run and shard leases, so they lapse while
	// the member runs on: the slow owner a peer takes over from. Deaf hides
	// the cancel requests made on peers too, like a member killed before it
	// heard them.
	NoRenew atomic.Bool
	Deaf    atomic.Bool
	// Starts counts RunStart calls.
	Starts atomic.Int64
	// AfterFinish, when set, runs once a RunFinish landed, before its
	// caller goes on: the window in which the history holds a run as ended
	// that the executor still holds.
	AfterFinish atomic.Pointer[func()]
}

// RunFinish runs AfterFinish once the finish landed.
func (s *Store) RunFinish(ctx context.Context, f db.RunFinal) (bool, error) {
	won, err := s.Store.RunFinish(ctx, f)
	if hook := s.AfterFinish.Load(); err == nil && hook != nil {
		(*hook)()
	}
	return won, err
}

// RunStart counts its calls.
func (s *Store) RunStart(ctx context.Context, runID string, startedAt time.Time) (bool, error) {
	s.Starts.Add(1)
	return s.Store.RunStart(ctx, runID, startedAt)
}

// RunGet fails when FailGets is set.
func (s *Store) RunGet(ctx context.Context, id string) (*db.RunRecord, error) {
	if s.FailGets.Load() {
		return nil, errors.New("injected read failure")
	}
	return s.Store.RunGet(ctx, id)
}

// RunSubmit fails while FailSubmits counts down.
func (s *Store) RunSubmit(ctx context.Context, rec *db.RunRecord, a *db.AuditEntry) error {
	if s.FailSubmits.Add(-1) >= 0 {
		verdict := db.Permanent
		if s.Transient.Load() {
			verdict = db.Transient
		}
		return &db.Error{Op: "run submit", Transience: verdict, Err: errors.New("injected write failure")}
	}
	return s.Store.RunSubmit(ctx, rec, a)
}

// RunRenewLeases fails when NoRenew is set.
func (s *Store) RunRenewLeases(ctx context.Context) ([]string, error) {
	if s.NoRenew.Load() {
		return nil, errors.New("injected: renewal lost")
	}
	return s.Store.RunRenewLeases(ctx)
}

// ShardRenewLeases fails when NoRenew is set.
func (s *Store) ShardRenewLeases(ctx context.Context) ([]db.ShardKey, error) {
	if s.NoRenew.Load() {
		return nil, errors.New("injected: renewal lost")
	}
	return s.Store.ShardRenewLeases(ctx)
}

// RunPendingCancellations hears nothing when Deaf is set.
func (s *Store) RunPendingCancellations(ctx context.Context) ([]string, error) {
	if s.Deaf.Load() {
		return nil, nil
	}
	return s.Store.RunPendingCancellations(ctx)
}

// Clock is a store clock a test moves: real time plus an offset, so a
// lease lapses the moment the test says, without waiting for it.
type Clock struct{ skew atomic.Int64 }

// Now is the clock's time, for db.Options.Clock.
func (c *Clock) Now() time.Time { return time.Now().Add(time.Duration(c.skew.Load())) }

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) { c.skew.Add(int64(d)) }

// History is a SQLite history file for one test.
func History(t testing.TB) string { return "sqlite:" + filepath.Join(t.TempDir(), "history.db") }

// open opens a store on url for t and wraps it.
func open(t testing.TB, url string, opts db.Options) *Store {
	t.Helper()
	st, err := db.Open(context.Background(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &Store{Store: st}
}

// Stack is the services of one server, as server.Run wires them.
type Stack struct {
	Store     *Store
	Logs      *runlog.Hub
	Exec      *execution.Executor
	Admission *admission.Service
	// Member is the cluster membership; nil for a local stack, which has
	// Shards, the executor of its sharded runs, instead.
	Member *cluster.Member
	Shards *cluster.Local
	// Metrics are the stack's instruments.
	Metrics *metrics.Metrics

	stopOnce sync.Once
}

// Options configure a stack; zero values take the services' defaults.
type Options struct {
	Engine    Engine
	Exec      execution.Config
	Admission admission.Config
	// Store configures the history store.
	Store db.Options
	// History is the URL of a shared history; "" means a fresh file.
	History string
	// Cluster makes the stack a cluster member with this config.
	Cluster *cluster.Config
	// Local configures a local stack's executor of sharded runs.
	Local cluster.Config
}

// Start starts a stack and stops it when t ends.
func Start(t testing.TB, o Options) *Stack {
	t.Helper()
	url := o.History
	if url == "" {
		url = History(t)
	}
	s := &Stack{Store: open(t, url, o.Store), Metrics: metrics.New()}
	if os.Getenv("ST_LOG") != "" {
		l := slog.New(slog.NewTextHandler(os.Stderr, nil))
		o.Exec.Logger, o.Admission.Logger = l, l
		if o.Cluster != nil {
			o.Cluster.Logger = l
		}
	}
	o.Exec.Metrics, o.Admission.Metrics = s.Metrics, s.Metrics
	s.Logs = runlog.New(runlog.Config{Store: s.Store, MaxLinesPerRun: 1000})
	rec := audit.New(audit.Config{Store: s.Store})
	var dispatch admission.Dispatcher
	if o.Cluster != nil {
		var member *cluster.Member
		o.Exec.SlotFreed = func() { member.SlotFreed() }
		s.Exec = execution.New(o.Exec, s.Store, o.Engine, s.Logs)
		cc := *o.Cluster
		cc.Metrics = s.Metrics
		member = cluster.New(cc, s.Store, s.Exec, o.Engine)
		s.Member, dispatch = member, member
		o.Admission.Cluster = true
	} else {
		var shards *cluster.Local
		o.Exec.Split = func(t *execution.Task, plan *pipeline.Plan) bool { return shards.Split(t, plan) }
		s.Exec = execution.New(o.Exec, s.Store, o.Engine, s.Logs)
		lc := o.Local
		lc.Metrics = s.Metrics
		if lc.LeaseTTL == 0 {
			lc.LeaseTTL = o.Store.LeaseTTL
		}
		if lc.Logger == nil {
			lc.Logger = o.Exec.Logger
		}
		shards = cluster.NewLocal(lc, s.Store, s.Exec, o.Engine)
		s.Shards, dispatch = shards, s.Exec
	}
	s.Admission = admission.New(o.Admission, s.Store, o.Engine, dispatch, rec)
	ctx := context.Background()
	for _, start := range []func(context.Context) error{s.Logs.Start, s.Exec.Start, s.Admission.Start} {
		if err := start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if s.Member != nil {
		if err := s.Member.Start(ctx); err != nil {
			t.Fatal(err)
		}
	} else if err := s.Shards.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(10 * time.Second) })
	return s
}

// Stop stops the stack as server.Run does, giving its runs grace to end,
// and returns the executor's verdict. Later calls do nothing.
func (s *Stack) Stop(grace time.Duration) error {
	var err error
	s.stopOnce.Do(func() {
		s.Admission.Stop()
		if s.Member != nil {
			s.Member.StopClaiming()
		} else {
			s.Shards.StopClaiming()
		}
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		err = s.Exec.Stop(ctx)
		if s.Member != nil {
			s.Member.Stop(ctx)
		} else {
			s.Shards.Stop(ctx)
		}
		s.Logs.Stop(ctx)
	})
	return err
}

// Submit submits config (YAML) and fails t on a refusal.
func (s *Stack) Submit(t testing.TB, config string) admission.Result {
	t.Helper()
	res, err := s.Admission.Submit(context.Background(), admission.Request{Config: config, ConfigFormat: "yaml"})
	if err != nil {
		t.Fatalf("submit %q: %v", config, err)
	}
	return res
}

// Idle reports whether the stack holds no run or shard.
func (s *Stack) Idle() bool { return s.Exec.Stats().InFlight == 0 && len(s.Exec.Owned()) == 0 }

// AwaitRun polls a run until f accepts it and returns it.
func AwaitRun(t testing.TB, st db.Store, id string, what string, f func(*db.RunRecord) bool) *db.RunRecord {
	t.Helper()
	var rec *db.RunRecord
	testwait.Until(t, 30*time.Second, func() error {
		var err error
		if rec, err = st.RunGet(context.Background(), id); err == nil && f(rec) {
			return nil
		}
		return fmt.Errorf("run %s never became %s (last %+v, %v)", id, what, rec, err)
	})
	return rec
}

// Await polls a run until it has status want and returns it.
func Await(t testing.TB, st db.Store, id string, want db.RunStatus) *db.RunRecord {
	t.Helper()
	return AwaitRun(t, st, id, string(want), func(rec *db.RunRecord) bool { return rec.Status == want })
}

// AwaitLogLines polls a run's persisted log lines until ok accepts their
// count.
func AwaitLogLines(t testing.TB, st db.Store, id string, ok func(int) bool) {
	t.Helper()
	testwait.Until(t, 30*time.Second, func() error {
		page, err := st.RunLogList(context.Background(), id, 0, 1000)
		if err == nil && ok(len(page.Lines)) {
			return nil
		}
		return fmt.Errorf("run %s has %d persisted log lines (%v)", id, len(page.Lines), err)
	})
}

// Ptr returns a pointer to v.
func Ptr[T any](v T) *T { return &v }
