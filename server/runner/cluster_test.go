package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/server/logs"
)

// clusterLease is short so leases lapse within a test; the poll shorter.
const (
	clusterLease = 2 * time.Second
	clusterPoll  = 50 * time.Millisecond
)

// leaseStore is a member's store whose heartbeat can be cut, so its leases
// lapse while it still runs: the slow owner a peer takes over from. Cut
// off entirely (deaf too), it no longer hears cancel requests either, like
// a member killed before it delivered one.
type leaseStore struct {
	db.Store
	noRenew atomic.Bool
	deaf    atomic.Bool
}

func (s *leaseStore) RunRenewLeases(ctx context.Context) (int, error) {
	if s.noRenew.Load() {
		return 0, errors.New("injected: renewal lost")
	}
	return s.Store.RunRenewLeases(ctx)
}

func (s *leaseStore) RunPendingCancellations(ctx context.Context) ([]string, error) {
	if s.deaf.Load() {
		return nil, nil
	}
	return s.Store.RunPendingCancellations(ctx)
}

// clusterMember is one in-process cluster member over a shared SQLite file.
type clusterMember struct {
	*Runner
	store *leaseStore
}

// sharedHistory is a SQLite history file for one test's cluster.
func sharedHistory(t *testing.T) string {
	return "sqlite:" + filepath.Join(t.TempDir(), "shared.db")
}

// newCluster starts one member per engine on the history at path, each with
// slots execution slots.
func newCluster(t *testing.T, path string, slots int, engines ...Engine) []clusterMember {
	t.Helper()
	out := make([]clusterMember, len(engines))
	for i, e := range engines {
		st, err := db.Open(context.Background(), path, db.Options{LeaseTTL: clusterLease})
		if err != nil {
			t.Fatal(err)
		}
		ls := &leaseStore{Store: st}
		hub := logs.NewHub(logs.Options{Store: st, MaxLinesPerRun: 1000})
		r := New(Config{
			Cluster: true, ClusterPoll: clusterPoll, LeaseTTL: clusterLease, MaxAttempts: 3, MaxConcurrent: slots,
		}, ls, e, hub, nil, nil)
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.Cluster(ctx)
		}()
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = r.Shutdown(sctx)
			stop()
			<-done
			hub.Close(sctx)
			st.Close()
		})
		out[i] = clusterMember{Runner: r, store: ls}
	}
	return out
}

// awaitRun polls a run until f accepts it.
func awaitRun(t *testing.T, st db.Store, id string, what string, f func(*db.RunRecord) bool) *db.RunRecord {
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

func TestClusterExecutesEverySubmitOnce(t *testing.T) {
	var executions atomic.Int64
	e := testEngine{executions: &executions}
	members := newCluster(t, sharedHistory(t), 4, e, e, e)
	const runs = 60
	ids := make([]string, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			res, err := members[i%3].Submit(context.Background(), SubmitRequest{Config: "7", ConfigFormat: "yaml"})
			if err != nil {
				t.Error(err)
				return
			}
			if res.Status != db.StatusPending {
				t.Errorf("clustered submit answered %s", res.Status)
			}
			ids[i] = res.RunID
		})
	}
	wg.Wait()
	for _, id := range ids {
		rec := await(t, members[0].store, id, db.StatusCompleted)
		if rec.RecordsWritten != 7 || rec.Attempt != 0 || rec.StartedAt == nil {
			t.Fatalf("run %s = %+v", id, rec)
		}
	}
	if n := executions.Load(); n != runs {
		t.Fatalf("%d executions for %d runs", n, runs)
	}
}

// idle reports whether the member has finished with every run it held.
func (m clusterMember) idle() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.active) == 0 && len(m.shards) == 0
}

func TestClusterDiscardsTheResultOfAReclaimedRun(t *testing.T) {
	path := sharedHistory(t)
	gate := make(chan struct{})
	// One slot, held by the run: the owner cannot take the run back itself.
	first := newCluster(t, path, 1, testEngine{scale: 1, gate: gate})[0]
	res, err := first.Submit(context.Background(), SubmitRequest{Config: "gated", ConfigFormat: "yaml"})
	if err != nil {
		t.Fatal(err)
	}
	await(t, first.store, res.RunID, db.StatusRunning)
	// The owner stops renewing its lease while it still runs the run; a
	// peer takes the run over once the lease lapsed.
	first.store.noRenew.Store(true)
	peer := newCluster(t, path, 1, testEngine{scale: 2, gate: gate})[0]
	awaitRun(t, peer.store, res.RunID, "claimed again", func(r *db.RunRecord) bool {
		return r.Attempt == 1 && r.Status == db.StatusRunning
	})
	close(gate)
	rec := await(t, peer.store, res.RunID, db.StatusCompleted)
	if rec.RecordsWritten != 10 {
		t.Fatalf("the record is not the reclaiming member's result: %+v", rec)
	}
	// The first owner finished too; its late result is discarded.
	testwait.Until(t, 30*time.Second, func() error {
		if !first.idle() {
			return errors.New("the first owner never finished its copy of the run")
		}
		return nil
	})
	if rec := await(t, peer.store, res.RunID, db.StatusCompleted); rec.RecordsWritten != 10 || rec.Attempt != 1 {
		t.Fatalf("the first owner's late result replaced the record: %+v", rec)
	}
}

func TestClusterTakeoverEndsACancelledRunWithoutExecutingIt(t *testing.T) {
	path := sharedHistory(t)
	var ownerRuns, peerRuns atomic.Int64
	// One slot, held by the run: the owner cannot claim the run again.
	owner := newCluster(t, path, 1, testEngine{executions: &ownerRuns})[0]
	res, err := owner.Submit(context.Background(), SubmitRequest{Config: "hold", ConfigFormat: "yaml"})
	if err != nil {
		t.Fatal(err)
	}
	await(t, owner.store, res.RunID, db.StatusRunning)
	// The owner is cut off before it hears of the cancel: its lease lapses
	// with the run still executing and the cancel request still on it.
	owner.store.deaf.Store(true)
	owner.store.noRenew.Store(true)
	peer := newCluster(t, path, 1, testEngine{executions: &peerRuns})[0]
	if out, err := peer.Cancel(context.Background(), res.RunID); err != nil || out != CancelRequested {
		t.Fatalf("cancel of the running run: %v %v", out, err)
	}
	rec := await(t, peer.store, res.RunID, db.StatusCancelled)
	if rec.Attempt != 1 {
		t.Fatalf("the run ended at attempt %d, want 1 (taken over once): %+v", rec.Attempt, rec)
	}
	if n := peerRuns.Load(); n != 0 {
		t.Fatalf("the peer executed the cancelled run %d time(s)", n)
	}
	if n := ownerRuns.Load(); n != 1 {
		t.Fatalf("the owner executed the run %d time(s), want 1", n)
	}
	page, err := peer.store.RunLogList(context.Background(), res.RunID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var said bool
	for _, l := range page.Lines {
		said = said || strings.Contains(l.Line, "does not execute again")
	}
	if !said {
		t.Fatalf("the run's log does not say why the takeover did not execute it: %+v", page.Lines)
	}
}

func TestClusterCancelReachesThePeerThatRunsIt(t *testing.T) {
	path := sharedHistory(t)
	owner := newCluster(t, path, 4, testEngine{})[0]
	res, err := owner.Submit(context.Background(), SubmitRequest{Config: "hold", ConfigFormat: "yaml"})
	if err != nil {
		t.Fatal(err)
	}
	await(t, owner.store, res.RunID, db.StatusRunning)
	other := newCluster(t, path, 4, testEngine{})[0]
	if out, err := other.Cancel(context.Background(), res.RunID); err != nil || out != CancelRequested {
		t.Fatalf("cancel on the other member: %v %v", out, err)
	}
	rec := await(t, other.store, res.RunID, db.StatusCancelled)
	if rec.RecordsWritten != 3 {
		t.Fatalf("cancelled run = %+v, want the 3 acknowledged records", rec)
	}
	// A pending run is cancelled by whichever member is asked, at once.
	pending := &db.RunRecord{RunID: "p1", Status: db.StatusPending, SubmittedAt: time.Now(), ConfigBody: ptr("hold")}
	if err := owner.store.RunSubmit(context.Background(), pending, nil); err != nil {
		t.Fatal(err)
	}
	// A member may claim it first; then the cancel is requested of its
	// owner instead, with the same answer.
	if out, err := other.Cancel(context.Background(), "p1"); err != nil || out != CancelRequested {
		t.Fatalf("cancel of pending run p1: %v %v, want %v", out, err, CancelRequested)
	}
	if rec := await(t, other.store, "p1", db.StatusCancelled); rec.FinishedAt == nil {
		t.Fatalf("cancelled pending run = %+v", rec)
	}
}

// wholeEngine is testEngine with two configs that ask for shards they
// cannot have: "matrix:<rows>" is a matrix of that many invocations over a
// shardable source (invocation i writes 10·i records), "unshardable:<n>" a
// single pipeline writing n records from a source that cannot be split.
// It executes a plan's invocations one after another.
type wholeEngine struct{ testEngine }

func (e wholeEngine) Load(config []byte, format string) (*pipeline.Plan, error) {
	kind, arg, _ := strings.Cut(string(config), ":")
	n, err := strconv.Atoi(arg)
	switch {
	case kind != "matrix" && kind != "unshardable":
		return e.testEngine.Load(config, format)
	case err != nil:
		return nil, err
	case kind == "matrix":
		plan := &pipeline.Plan{Name: kind, Shard: &pipeline.Shard{Count: 4}}
		for i := 1; i <= n; i++ {
			plan.Invocations = append(plan.Invocations, pipeline.Invocation{RowID: strconv.Itoa(10 * i), Source: pipeline.ConnectorConfig{Type: "split"}})
		}
		return plan, nil
	}
	return &pipeline.Plan{Name: kind, Shard: &pipeline.Shard{Count: 4}, Invocations: []pipeline.Invocation{
		{RowID: arg, Source: pipeline.ConnectorConfig{Type: "generate"}},
	}}, nil
}

func (e wholeEngine) Execute(ctx context.Context, _ string, plan *pipeline.Plan, log *slog.Logger, progress func(int64)) ([]pipeline.InvocationResult, error) {
	var out []pipeline.InvocationResult
	for _, inv := range plan.Invocations {
		one := *plan
		one.Invocations = []pipeline.Invocation{inv}
		res, err := e.testEngine.Execute(ctx, "", &one, log, progress)
		out = append(out, res...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func TestClusterSplitsARunIntoShards(t *testing.T) {
	path := sharedHistory(t)
	members := newCluster(t, path, 4, wholeEngine{}, wholeEngine{})
	cases := map[string]struct {
		config  string
		status  db.RunStatus
		records int64
		err     string
		// shards is how many shard rows the run gets; 0 when it runs whole.
		shards int
	}{
		"all shards complete":              {"split:6", db.StatusCompleted, 60, "", 6},
		"one shard fails":                  {"split:4:2", db.StatusFailed, 30, "1/4 shard(s) failed", 4},
		"a matrix runs whole":              {"matrix:3", db.StatusCompleted, 60, "", 0},
		"an unshardable source runs whole": {"unshardable:25", db.StatusCompleted, 25, "", 0},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := members[0].Submit(context.Background(), SubmitRequest{Config: c.config, ConfigFormat: "yaml"})
			if err != nil {
				t.Fatal(err)
			}
			whole := strings.Contains(strings.Join(res.Warnings, "\n"), "the run executes whole")
			if whole != (c.shards == 0) {
				t.Fatalf("warnings %q: a run that executes whole is told so, a sharded one not", res.Warnings)
			}
			rec := await(t, members[1].store, res.RunID, c.status)
			if rec.RecordsWritten != c.records || (c.err != "" && (rec.Error == nil || *rec.Error != c.err)) {
				t.Fatalf("run = %+v (error %v)", rec, rec.Error)
			}
			p, err := members[1].store.ShardProgress(context.Background(), res.RunID)
			if err != nil || p.Total != c.shards {
				t.Fatalf("shard progress %+v, %v; want %d shards", p, err, c.shards)
			}
		})
	}
}

func TestClusterShutdownHandsRunsToAPeer(t *testing.T) {
	path := sharedHistory(t)
	gate := make(chan struct{})
	leaving := newCluster(t, path, 1, testEngine{scale: 1, gate: gate})[0]
	res, err := leaving.Submit(context.Background(), SubmitRequest{Config: "gated", ConfigFormat: "yaml"})
	if err != nil {
		t.Fatal(err)
	}
	await(t, leaving.store, res.RunID, db.StatusRunning)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := leaving.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if rec := await(t, leaving.store, res.RunID, db.StatusPending); rec.Attempt != 1 {
		t.Fatalf("handed-back run = %+v, want pending at attempt 1", rec)
	}
	close(gate)
	peer := newCluster(t, path, 1, testEngine{scale: 2, gate: gate})[0]
	if rec := await(t, peer.store, res.RunID, db.StatusCompleted); rec.RecordsWritten != 10 || rec.Attempt != 1 {
		t.Fatalf("the peer's run = %+v", rec)
	}
}
