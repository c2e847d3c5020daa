package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/server/admission"
	"github.com/faucet-dev/faucet/server/cluster"
	"github.com/faucet-dev/faucet/server/execution"
	st "github.com/faucet-dev/faucet/server/servicetest"
)

// local starts a server outside a cluster with slots execution slots.
func local(t *testing.T, slots int, history string) *st.Stack {
	t.Helper()
	return st.Start(t, st.Options{
		History: history,
		Exec:    execution.Config{MaxConcurrent: slots},
		Local:   cluster.Config{Poll: poll},
	})
}

// TestLocalSplitsARunIntoShards: outside a cluster a sharded run leaves the
// records a cluster's would (the parent sharded, then terminal with the sum
// of its shards, failed with the cluster's error text when a shard fails),
// with more shards than slots, and a run that cannot be split runs whole.
func TestLocalSplitsARunIntoShards(t *testing.T) {
	t.Parallel()
	s := local(t, 2, "")
	cases := map[string]struct {
		config  string
		status  db.RunStatus
		records int64
		err     string
		shards  int
	}{
		"all shards complete":              {"split:6", db.StatusCompleted, 60, "", 6},
		"one shard fails":                  {"split:4:2", db.StatusFailed, 30, "1/4 shard(s) failed", 4},
		"a matrix runs whole":              {"matrix:3", db.StatusCompleted, 60, "", 0},
		"an unshardable source runs whole": {"unshardable:25", db.StatusCompleted, 25, "", 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := s.Submit(t, tc.config)
			whole := strings.Contains(strings.Join(res.Warnings, "\n"), "the run executes whole")
			if whole != (tc.shards == 0) {
				t.Fatalf("warnings %q: a run that executes whole is told so, a sharded one not", res.Warnings)
			}
			rec := st.Await(t, s.Store, res.RunID, tc.status)
			if rec.RecordsWritten != tc.records || (tc.err != "" && (rec.Error == nil || *rec.Error != tc.err)) {
				t.Fatalf("run = %+v (error %v)", rec, rec.Error)
			}
			shards, err := s.Store.ShardList(context.Background(), res.RunID)
			if err != nil || len(shards) != tc.shards {
				t.Fatalf("shards %+v, %v; want %d", shards, err, tc.shards)
			}
			for _, sh := range shards {
				if sh.Owner == nil || *sh.Owner != s.Store.InstanceID() || sh.Attempt != 0 {
					t.Fatalf("shard %+v was not claimed once by this server (%s)", sh, s.Store.InstanceID())
				}
			}
		})
	}
}

// TestLocalShardsAndRunsShareTheSlots: with one slot, a sharded run whose
// shards all wait for it and whole runs submitted around it all finish: the
// shards never hold a slot while waiting for another, and take their turns
// with the runs.
func TestLocalShardsAndRunsShareTheSlots(t *testing.T) {
	t.Parallel()
	s := local(t, 1, "")
	var ids []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			config := "7"
			if i%2 == 0 {
				config = "split:5"
			}
			id := s.Submit(t, config).RunID
			mu.Lock()
			ids = append(ids, id)
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, id := range ids {
		rec := st.Await(t, s.Store, id, db.StatusCompleted)
		if want := map[bool]int64{true: 50, false: 7}[rec.Name != nil && *rec.Name == "split"]; rec.RecordsWritten != want {
			t.Fatalf("run %s wrote %d, want %d", id, rec.RecordsWritten, want)
		}
	}
	if n := testutil.ToFloat64(s.Metrics.ShardsInFlight); n != 0 {
		t.Fatalf("%v shards still in flight", n)
	}
}

// TestLocalCancelStopsEveryShard: a cancel stops the shard that runs and
// cancels those that wait for a slot, and the run ends cancelled.
func TestLocalCancelStopsEveryShard(t *testing.T) {
	t.Parallel()
	s := local(t, 1, "")
	res := s.Submit(t, "split:3:hold")
	testwait.Until(t, 30*time.Second, func() error {
		if n := testutil.ToFloat64(s.Metrics.ShardsInFlight); n != 1 {
			return fmt.Errorf("%v shards run, want 1", n)
		}
		return nil
	})
	if out, err := s.Exec.Cancel(context.Background(), res.RunID); err != nil || out != execution.CancelRequested {
		t.Fatalf("cancel = %v, %v", out, err)
	}
	rec := st.Await(t, s.Store, res.RunID, db.StatusCancelled)
	if rec.RecordsWritten != 3 {
		t.Fatalf("cancelled run = %+v, want the 3 records its running shard wrote", rec)
	}
	shards, err := s.Store.ShardList(context.Background(), res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, sh := range shards {
		if sh.Status != db.ShardCancelled {
			t.Fatalf("shard %+v is not cancelled", sh)
		}
		if sh.RecordsWritten > 0 {
			ran++
		}
	}
	if len(shards) != 3 || ran != 1 {
		t.Fatalf("shards %+v: want 3 cancelled, 1 of them stopped while it ran", shards)
	}
}

// TestLocalShutdownHandsShardsToTheNextStart: a server that stops gives its
// running shards back, and the next server on the history resumes the run,
// each shard on a later attempt.
func TestLocalShutdownHandsShardsToTheNextStart(t *testing.T) {
	t.Parallel()
	history := st.History(t)
	first := local(t, 2, history)
	res := first.Submit(t, "split:2:hold")
	testwait.Until(t, 30*time.Second, func() error {
		if n := testutil.ToFloat64(first.Metrics.ShardsInFlight); n != 2 {
			return fmt.Errorf("%v shards run, want 2", n)
		}
		return nil
	})
	if err := first.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if rec, err := first.Store.RunGet(context.Background(), res.RunID); err != nil || rec.Status != db.StatusSharded {
		t.Fatalf("after the shutdown the run is %+v, %v; want it sharded, for the next start", rec, err)
	}
	next := local(t, 2, history)
	testwait.Until(t, 30*time.Second, func() error {
		if n := testutil.ToFloat64(next.Metrics.ShardsInFlight); n != 2 {
			return fmt.Errorf("the next start runs %v shards, want 2", n)
		}
		return nil
	})
	if _, err := next.Exec.Cancel(context.Background(), res.RunID); err != nil {
		t.Fatal(err)
	}
	st.Await(t, next.Store, res.RunID, db.StatusCancelled)
	shards, err := next.Store.ShardList(context.Background(), res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range shards {
		if sh.Attempt != 1 || sh.Owner == nil || *sh.Owner != next.Store.InstanceID() {
			t.Fatalf("shard %+v was not resumed by the next start", sh)
		}
	}
}

// TestLocalTimeoutEndsEachShard: timeout_secs bounds each shard from its
// start, as in a cluster; shards that run past it fail, and so does the run.
func TestLocalTimeoutEndsEachShard(t *testing.T) {
	t.Parallel()
	s := local(t, 2, "")
	res, err := s.Admission.Submit(context.Background(), admission.Request{Config: "split:2:hold", ConfigFormat: "yaml", TimeoutSecs: st.Ptr[int64](1)})
	if err != nil {
		t.Fatal(err)
	}
	rec := st.Await(t, s.Store, res.RunID, db.StatusFailed)
	if rec.Error == nil || *rec.Error != "2/2 shard(s) failed" || rec.RecordsWritten != 6 {
		t.Fatalf("timed-out run = %+v (error %v)", rec, rec.Error)
	}
	shards, err := s.Store.ShardList(context.Background(), res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range shards {
		if sh.Status != db.ShardFailed || sh.Error == nil || !strings.Contains(*sh.Error, "timeout_secs (1s)") {
			t.Fatalf("shard %+v did not fail on the timeout", sh)
		}
	}
}
