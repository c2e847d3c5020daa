// Package dbtest is the one conformance suite every run-history dialect must
// pass: each dialect's tests call Exercise (and Benchmark) with a function
// that returns the history URL of a fresh, empty database, and with a Peek
// into what the dialect stores. Every behaviour of db.Store is proven here,
// including the concurrency guarantees, so the dialects cannot drift apart.
package dbtest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

// Peek reads and changes what a dialect stores in ways the Store does not
// offer. Only the dialect's own package can, so its tests hand these hooks to
// Exercise; every hook is required. Each takes the history URL of the
// database and reaches it with a connection of its own.
type Peek struct {
	// Submission returns the submission document stored for runID, exactly
	// as stored.
	Submission func(t testing.TB, url, runID string) []byte
	// ShardError returns the error stored for one shard.
	ShardError func(t testing.TB, url, runID, shardID string) *string
	// DropRun deletes a run's row alone, leaving its shards behind, as a
	// history damaged outside faucet would.
	DropRun func(t testing.TB, url, runID string)
	// CatalogStats counts the volume points stored for a dataset among
	// its newest db.StatsKept (kept), and the blocks stored holding none of
	// them (stale).
	CatalogStats func(t testing.TB, url, datasetID string) (kept, stale int)
}

// Exercise runs the conformance suite against the dialect newURL's databases
// belong to. newURL returns the history URL of a fresh, empty database and
// arranges its removal when t ends.
//
// Time is a clock the test moves (see clock): what must stay live is given
// minutes, what must lapse is moved past its window, so no assertion depends
// on how fast the machine is and no test sleeps.
func Exercise(t *testing.T, newURL func(t testing.TB) string, peek Peek) {
	t.Helper()
	suites := []struct {
		name string
		run  func(t *testing.T, newURL func(t testing.TB) string)
	}{
		{"Open", exerciseOpen},
		{"Migrations", exerciseMigrations},
		{"Idempotency", exerciseIdempotency},
		{"Runs", exerciseRuns},
		{"Submission", func(t *testing.T, newURL func(t testing.TB) string) { exerciseSubmission(t, newURL, peek) }},
		{"List", exerciseList},
		{"Delete", exerciseDelete},
		{"Leases", exerciseLeases},
		{"ClaimPending", exerciseClaimPending},
		{"Reclaim", exerciseReclaim},
		{"Finalize", exerciseFinalize},
		{"RunPath", exerciseRunPath},
		{"Cancel", exerciseCancel},
		{"Instances", exerciseInstances},
		{"InstanceWork", exerciseInstanceWork},
		{"Leader", exerciseLeader},
		{"Shards", func(t *testing.T, newURL func(t testing.TB) string) { exerciseShards(t, newURL, peek) }},
		{"Audit", exerciseAudit},
		{"RunLogs", exerciseRunLogs},
		{"LocalOutputs", exerciseLocalOutputs},
		{"Purge", func(t *testing.T, newURL func(t testing.TB) string) { exercisePurge(t, newURL, peek) }},
		{"Catalog", func(t *testing.T, newURL func(t testing.TB) string) { exerciseCatalog(t, newURL, peek) }},
		{"Templates", exerciseTemplates},
		{"Triggers", exerciseTriggers},
		{"Callbacks", exerciseCallbacks},
	}
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			s.run(t, newURL)
		})
	}
}

// clock is the time of one test's stores: it starts at the real time and
// moves only when the test advances it, so a lease lapses or a claim expires
// exactly when the test says.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Now()} }

// Now is the clock's time, for db.Options.Clock.
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// open opens a store on url, closing it when t ends.
func open(t testing.TB, url string, opts db.Options) db.Store {
	t.Helper()
	s, err := db.Open(context.Background(), url, opts)
	if err != nil {
		t.Fatalf("open %s: %v", db.RedactURL(url), err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return s
}

// stores opens one store per instance id on url.
func stores(t testing.TB, url string, instanceIDs ...string) []db.Store {
	t.Helper()
	out := make([]db.Store, len(instanceIDs))
	for i, instance := range instanceIDs {
		out[i] = open(t, url, db.Options{InstanceID: instance})
	}
	return out
}

// concurrently runs fn(0) … fn(n-1) in n goroutines released at once and
// returns their results in order, failing t on any error.
func concurrently[T any](t testing.TB, n int, fn func(i int) (T, error)) []T {
	t.Helper()
	out := make([]T, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			out[i], errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent call %d: %v", i, err)
		}
	}
	return out
}

// drainConcurrently runs workers goroutines at once, each calling
// claim(worker) until it returns nothing, and fails t unless the keys they
// claimed are want distinct keys, each claimed exactly once.
func drainConcurrently(t testing.TB, workers, want int, claim func(worker int) ([]string, error)) {
	t.Helper()
	got := concurrently(t, workers, func(w int) ([]string, error) {
		var all []string
		for {
			keys, err := claim(w)
			if err != nil || len(keys) == 0 {
				return all, err
			}
			all = append(all, keys...)
		}
	})
	count := map[string]int{}
	for _, keys := range got {
		for _, k := range keys {
			if count[k]++; count[k] == 2 {
				t.Errorf("%s claimed more than once", k)
			}
		}
	}
	if len(count) != want {
		t.Fatalf("%d distinct keys claimed, want %d", len(count), want)
	}
}

// onlyWinner fails t unless exactly one of won is true, and returns its index.
func onlyWinner(t testing.TB, won []bool) int {
	t.Helper()
	winner := -1
	for i, w := range won {
		if !w {
			continue
		}
		if winner >= 0 {
			t.Fatalf("calls %d and %d both won", winner, i)
		}
		winner = i
	}
	if winner < 0 {
		t.Fatal("no call won")
	}
	return winner
}

// fresh opens a store on a fresh database.
func fresh(t testing.TB, newURL func(t testing.TB) string, instance string) db.Store {
	t.Helper()
	return open(t, newURL(t), db.Options{InstanceID: instance})
}

// now is the current time at the precision every store keeps.
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

func ptr[T any](v T) *T { return &v }

// newRun builds a minimal run record.
func newRun(id string, status db.RunStatus, submitted time.Time) *db.RunRecord {
	return &db.RunRecord{
		RunID:       id,
		Status:      status,
		SubmittedAt: submitted,
		Labels:      map[string]string{},
		Invocations: []db.InvocationRecord{},
	}
}

// submit writes runs as given, owned by s.
func submit(t testing.TB, s db.Store, recs ...*db.RunRecord) {
	t.Helper()
	for _, r := range recs {
		if err := s.RunSubmit(t.Context(), r, nil); err != nil {
			t.Fatalf("submit %s: %v", r.RunID, err)
		}
	}
}

func get(t testing.TB, s db.Store, id string) *db.RunRecord {
	t.Helper()
	r, err := s.RunGet(t.Context(), id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return r
}

// wantStatus fails t unless run id has status want.
func wantStatus(t testing.TB, s db.Store, id string, want db.RunStatus) *db.RunRecord {
	t.Helper()
	r := get(t, s, id)
	if r.Status != want {
		t.Fatalf("run %s: status %s, want %s", id, r.Status, want)
	}
	return r
}

// sameJSON fails t unless want and got marshal to the same JSON document
// (object key order and whitespace aside).
func sameJSON(t testing.TB, what string, want, got any) {
	t.Helper()
	w, g := normJSON(t, want), normJSON(t, got)
	if !reflect.DeepEqual(w, g) {
		wb, _ := json.MarshalIndent(w, "", "  ")
		gb, _ := json.MarshalIndent(g, "", "  ")
		t.Fatalf("%s differs\nwant: %s\n got: %s", what, wb, gb)
	}
}

func normJSON(t testing.TB, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	return out
}

func runIDs(recs []db.RunRecord) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.RunID
	}
	return out
}

func equalIDs(t testing.TB, what string, want, got []string) {
	t.Helper()
	if len(want) == 0 && len(got) == 0 {
		return
	}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

func id(prefix string, i int) string { return fmt.Sprintf("%s-%04d", prefix, i) }
