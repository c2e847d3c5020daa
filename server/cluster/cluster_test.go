package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/server/cluster"
	"github.com/faucet-dev/faucet/server/execution"
	st "github.com/faucet-dev/faucet/server/servicetest"
)

// The members' leases are long and their clock is the test's: a lease
// lapses when the test moves the clock past it, never while the machine is
// merely slow. Polls and heartbeats are quick, so what the test awaits
// happens soon after it is due.
const (
	lease = time.Minute
	poll  = 50 * time.Millisecond
)

// lapse moves the members' clock past every lease granted so far.
func lapse(c *st.Clock) { c.Advance(lease + time.Second) }

// cluster is the members of one test, sharing a history file and a clock.
type testCluster struct {
	t       *testing.T
	history string
	clock   *st.Clock
}

func newCluster(t *testing.T) *testCluster {
	return &testCluster{t: t, history: st.History(t), clock: &st.Clock{}}
}

// join starts a member with slots execution slots.
func (c *testCluster) join(slots int, e st.Engine) *st.Stack {
	c.t.Helper()
	return c.joinWith(slots, e, lease)
}

// joinWith starts a member whose leases (its runs' and its leader lease)
// last ttl.
func (c *testCluster) joinWith(slots int, e st.Engine, ttl time.Duration) *st.Stack {
	c.t.Helper()
	return st.Start(c.t, st.Options{
		Engine: e, History: c.history,
		Store: db.Options{LeaseTTL: ttl, Clock: c.clock.Now},
		Exec:  execution.Config{MaxConcurrent: slots},
		Cluster: &cluster.Config{
			Poll: poll, HeartbeatEvery: poll, LeaseTTL: ttl, MaxAttempts: 3, Clock: c.clock.Now,
		},
	})
}

func leading(s *st.Stack) bool { return testutil.ToFloat64(s.Metrics.ClusterLeader) == 1 }

func TestClusterExecutesEverySubmitOnce(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	var executions atomic.Int64
	e := st.Engine{Executions: &executions}
	members := []*st.Stack{c.join(4, e), c.join(4, e), c.join(4, e)}
	const runs = 60
	ids := make([]string, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			res := members[i%3].Submit(t, "7")
			if res.Status != db.StatusPending {
				t.Errorf("clustered submit answered %s", res.Status)
			}
			ids[i] = res.RunID
		})
	}
	wg.Wait()
	for _, id := range ids {
		rec := st.Await(t, members[0].Store, id, db.StatusCompleted)
		if rec.RecordsWritten != 7 || rec.Attempt != 0 || rec.StartedAt == nil {
			t.Fatalf("run %s = %+v", id, rec)
		}
	}
	if n := executions.Load(); n != runs {
		t.Fatalf("%d executions for %d runs", n, runs)
	}
}

func TestClusterDiscardsTheResultOfAReclaimedRun(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	gate := make(chan struct{})
	// One slot, held by the run: the owner cannot take the run back itself.
	first := c.join(1, st.Engine{Scale: 1, Gate: gate})
	res := first.Submit(t, "gated")
	st.Await(t, first.Store, res.RunID, db.StatusRunning)
	// The owner stops renewing its lease while it still runs the run; a
	// peer takes the run over once the lease lapsed.
	first.Store.NoRenew.Store(true)
	peer := c.join(1, st.Engine{Scale: 2, Gate: gate})
	lapse(c.clock)
	st.AwaitRun(t, peer.Store, res.RunID, "claimed again", func(r *db.RunRecord) bool {
		return r.Attempt == 1 && r.Status == db.StatusRunning
	})
	close(gate)
	rec := st.Await(t, peer.Store, res.RunID, db.StatusCompleted)
	if rec.RecordsWritten != 10 {
		t.Fatalf("the record is not the reclaiming member's result: %+v", rec)
	}
	// The first owner finished too; its late result is discarded.
	testwait.Until(t, 30*time.Second, func() error {
		if !first.Idle() {
			return errors.New("the first owner never finished its copy of the run")
		}
		return nil
	})
	if rec := st.Await(t, peer.Store, res.RunID, db.StatusCompleted); rec.RecordsWritten != 10 || rec.Attempt != 1 {
		t.Fatalf("the first owner's late result replaced the record: %+v", rec)
	}
}

// TestClusterStopsARunItLost: a member whose heartbeat came too late (its
// lease lapsed and a peer took the run over) learns from its next renewal
// that it no longer owns the run, and stops executing it, instead of
// running on beside the new owner.
func TestClusterStopsARunItLost(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	var ownerRuns, peerRuns atomic.Int64
	owner := c.join(1, st.Engine{Executions: &ownerRuns})
	res := owner.Submit(t, "hold")
	st.Await(t, owner.Store, res.RunID, db.StatusRunning)
	owner.Store.NoRenew.Store(true)
	peer := c.join(1, st.Engine{Executions: &peerRuns})
	lapse(c.clock)
	st.AwaitRun(t, peer.Store, res.RunID, "taken over", func(r *db.RunRecord) bool {
		return r.Attempt == 1 && r.Status == db.StatusRunning
	})
	// The owner's heartbeats land again: the first one tells it the run is
	// the peer's now.
	owner.Store.NoRenew.Store(false)
	testwait.Until(t, 30*time.Second, func() error {
		if !owner.Idle() {
			return errors.New("the member that lost the run still executes it")
		}
		return nil
	})
	if n := testutil.ToFloat64(owner.Metrics.LeasesLost.WithLabelValues("run")); n != 1 {
		t.Fatalf("the owner counted %v lost leases, want 1", n)
	}
	if rec := st.Await(t, peer.Store, res.RunID, db.StatusRunning); rec.Attempt != 1 {
		t.Fatalf("the lost run's record changed: %+v", rec)
	}
	if _, err := peer.Exec.Cancel(context.Background(), res.RunID); err != nil {
		t.Fatal(err)
	}
	st.Await(t, peer.Store, res.RunID, db.StatusCancelled)
	if ownerRuns.Load() != 1 || peerRuns.Load() != 1 {
		t.Fatalf("executions: owner %d, peer %d; want one each", ownerRuns.Load(), peerRuns.Load())
	}
	logSays(t, peer, res.RunID, "lost its lease on the run")
}

// logSays fails t unless a persisted log line of runID contains text.
func logSays(t *testing.T, via *st.Stack, runID, text string) {
	t.Helper()
	page, err := via.Store.RunLogList(context.Background(), runID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range page.Lines {
		if strings.Contains(l.Line, text) {
			return
		}
	}
	t.Fatalf("no log line of run %s says %q: %+v", runID, text, page.Lines)
}

// TestClusterStopsShardsItLost: the same for shards, which a peer took over
// and a cancel then ended: the member that lost them stops them, and the
// run ends cancelled with no shard left running anywhere.
func TestClusterStopsShardsItLost(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	// Two slots, both held by the shards: the owner cannot claim them again.
	owner := c.join(2, st.Engine{})
	res := owner.Submit(t, "split:2:hold")
	testwait.Until(t, 30*time.Second, func() error {
		if n := testutil.ToFloat64(owner.Metrics.ShardsInFlight); n != 2 {
			return fmt.Errorf("the owner runs %v shards, want both", n)
		}
		return nil
	})
	owner.Store.NoRenew.Store(true)
	peer := c.join(2, st.Engine{})
	lapse(c.clock)
	testwait.Until(t, 30*time.Second, func() error {
		if n := testutil.ToFloat64(peer.Metrics.ShardsInFlight); n != 2 {
			return fmt.Errorf("the peer runs %v shards, want both", n)
		}
		return nil
	})
	if _, err := peer.Exec.Cancel(context.Background(), res.RunID); err != nil {
		t.Fatal(err)
	}
	owner.Store.NoRenew.Store(false)
	st.Await(t, peer.Store, res.RunID, db.StatusCancelled)
	testwait.Until(t, 30*time.Second, func() error {
		if n := testutil.ToFloat64(owner.Metrics.ShardsInFlight); n != 0 || !owner.Idle() {
			return fmt.Errorf("the member that lost the shards still runs %v of them", n)
		}
		return nil
	})
	if n := testutil.ToFloat64(owner.Metrics.LeasesLost.WithLabelValues("shard")); n != 2 {
		t.Fatalf("the owner counted %v lost shard leases, want 2", n)
	}
}

func TestClusterTakeoverEndsACancelledRunWithoutExecutingIt(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	var ownerRuns, peerRuns atomic.Int64
	// One slot, held by the run: the owner cannot claim the run again.
	owner := c.join(1, st.Engine{Executions: &ownerRuns})
	res := owner.Submit(t, "hold")
	st.Await(t, owner.Store, res.RunID, db.StatusRunning)
	// The owner is cut off before it hears of the cancel: its lease lapses
	// with the run still executing and the cancel request still on it.
	owner.Store.Deaf.Store(true)
	owner.Store.NoRenew.Store(true)
	peer := c.join(1, st.Engine{Executions: &peerRuns})
	if out, err := peer.Exec.Cancel(context.Background(), res.RunID); err != nil || out != execution.CancelRequested {
		t.Fatalf("cancel of the running run: %v %v", out, err)
	}
	lapse(c.clock)
	rec := st.Await(t, peer.Store, res.RunID, db.StatusCancelled)
	if rec.Attempt != 1 {
		t.Fatalf("the run ended at attempt %d, want 1 (taken over once): %+v", rec.Attempt, rec)
	}
	if n := peerRuns.Load(); n != 0 {
		t.Fatalf("the peer executed the cancelled run %d time(s)", n)
	}
	if n := ownerRuns.Load(); n != 1 {
		t.Fatalf("the owner executed the run %d time(s), want 1", n)
	}
	logSays(t, peer, res.RunID, "does not execute again")
}

func TestClusterCancelReachesThePeerThatRunsIt(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	owner := c.join(4, st.Engine{})
	res := owner.Submit(t, "hold")
	st.Await(t, owner.Store, res.RunID, db.StatusRunning)
	other := c.join(4, st.Engine{})
	if out, err := other.Exec.Cancel(context.Background(), res.RunID); err != nil || out != execution.CancelRequested {
		t.Fatalf("cancel on the other member: %v %v", out, err)
	}
	rec := st.Await(t, other.Store, res.RunID, db.StatusCancelled)
	if rec.RecordsWritten != 3 {
		t.Fatalf("cancelled run = %+v, want the 3 acknowledged records", rec)
	}
	// A pending run is cancelled by whichever member is asked, at once.
	pending := &db.RunRecord{RunID: "p1", Status: db.StatusPending, SubmittedAt: time.Now(), ConfigBody: st.Ptr("hold")}
	if err := owner.Store.RunSubmit(context.Background(), pending, nil); err != nil {
		t.Fatal(err)
	}
	// A member may claim it first; then the cancel is requested of its
	// owner instead, with the same answer.
	if out, err := other.Exec.Cancel(context.Background(), "p1"); err != nil || out != execution.CancelRequested {
		t.Fatalf("cancel of pending run p1: %v %v, want %v", out, err, execution.CancelRequested)
	}
	if rec := st.Await(t, other.Store, "p1", db.StatusCancelled); rec.FinishedAt == nil {
		t.Fatalf("cancelled pending run = %+v", rec)
	}
}

func TestClusterSplitsARunIntoShards(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	members := []*st.Stack{c.join(4, st.Engine{}), c.join(4, st.Engine{})}
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
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := members[0].Submit(t, tc.config)
			whole := strings.Contains(strings.Join(res.Warnings, "\n"), "the run executes whole")
			if whole != (tc.shards == 0) {
				t.Fatalf("warnings %q: a run that executes whole is told so, a sharded one not", res.Warnings)
			}
			rec := st.Await(t, members[1].Store, res.RunID, tc.status)
			if rec.RecordsWritten != tc.records || (tc.err != "" && (rec.Error == nil || *rec.Error != tc.err)) {
				t.Fatalf("run = %+v (error %v)", rec, rec.Error)
			}
			p, err := members[1].Store.ShardProgress(context.Background(), res.RunID)
			if err != nil || p.Total != tc.shards {
				t.Fatalf("shard progress %+v, %v; want %d shards", p, err, tc.shards)
			}
		})
	}
}

func TestClusterShutdownHandsRunsToAPeer(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	gate := make(chan struct{})
	leaving := c.join(1, st.Engine{Scale: 1, Gate: gate})
	res := leaving.Submit(t, "gated")
	st.Await(t, leaving.Store, res.RunID, db.StatusRunning)
	if err := leaving.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if rec := st.Await(t, leaving.Store, res.RunID, db.StatusPending); rec.Attempt != 1 {
		t.Fatalf("handed-back run = %+v, want pending at attempt 1", rec)
	}
	close(gate)
	peer := c.join(1, st.Engine{Scale: 2, Gate: gate})
	if rec := st.Await(t, peer.Store, res.RunID, db.StatusCompleted); rec.RecordsWritten != 10 || rec.Attempt != 1 {
		t.Fatalf("the peer's run = %+v", rec)
	}
}

// awaitLeader waits until exactly one of among leads and returns it.
func awaitLeader(t *testing.T, among ...*st.Stack) *st.Stack {
	t.Helper()
	var only *st.Stack
	testwait.Until(t, 30*time.Second, func() error {
		var leaders []*st.Stack
		for _, m := range among {
			if leading(m) {
				leaders = append(leaders, m)
			}
		}
		if len(leaders) != 1 {
			return fmt.Errorf("%d of %d members lead, want 1", len(leaders), len(among))
		}
		only = leaders[0]
		return nil
	})
	return only
}

// TestClusterLeaderResignsWhenItStops: of the members one leads, and when
// it stops, it resigns, so a peer leads before any lease could lapse.
func TestClusterLeaderResignsWhenItStops(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	members := []*st.Stack{c.join(1, st.Engine{}), c.join(1, st.Engine{}), c.join(1, st.Engine{})}
	first := awaitLeader(t, members...)
	var rest []*st.Stack
	for _, m := range members {
		if m != first {
			rest = append(rest, m)
		}
	}
	if err := first.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	awaitLeader(t, rest...)
}

// TestClusterLeadershipMovesWhenTheLeaderDies: a leader cut off from the
// history stops renewing its leases; once they lapse, the survivor takes
// the leadership over and runs the sweeps: it requeues the dead leader's
// run and executes it.
func TestClusterLeadershipMovesWhenTheLeaderDies(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	const short = time.Second
	dying := c.joinWith(1, st.Engine{}, short)
	awaitLeader(t, dying)
	res := dying.Submit(t, "hold")
	st.Await(t, dying.Store, res.RunID, db.StatusRunning)
	survivor := c.join(1, st.Engine{})
	if got := awaitLeader(t, dying, survivor); got != dying {
		t.Fatal("the member that joined later took a live leader lease")
	}
	// Every call of the dying member fails from now on.
	if err := dying.Store.Store.Close(); err != nil {
		t.Fatal(err)
	}
	// Its writes can never land: its shutdown need not wait for them.
	defer func() { _ = dying.Stop(100 * time.Millisecond) }()
	c.clock.Advance(short + time.Millisecond)
	// The dying member leads on as long as its last lease is sure to hold,
	// by its own clock; then it steps down, and the survivor leads.
	testwait.Until(t, 30*time.Second, func() error {
		if leading(dying) || !leading(survivor) {
			return fmt.Errorf("dying leads: %v, survivor leads: %v; want only the survivor", leading(dying), leading(survivor))
		}
		return nil
	})
	st.AwaitRun(t, survivor.Store, res.RunID, "taken over", func(r *db.RunRecord) bool {
		return r.Attempt == 1 && r.Status == db.StatusRunning
	})
	// The sweep counts what it requeued once its shards' sweep returned,
	// which the run's claim by the survivor may precede.
	testwait.Until(t, 30*time.Second, func() error {
		if n := testutil.ToFloat64(survivor.Metrics.ClusterReclaims.WithLabelValues("run")); n != 1 {
			return fmt.Errorf("the new leader counted %v requeued runs, want the dead leader's", n)
		}
		return nil
	})
	if _, err := survivor.Exec.Cancel(context.Background(), res.RunID); err != nil {
		t.Fatal(err)
	}
	st.Await(t, survivor.Store, res.RunID, db.StatusCancelled)
}
