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

// Peek reads and ages what a dialect stores in ways the Store does not
// offer. Only the dialect's own package can, so its tests hand these hooks to
// Exercise; every hook is required.
type Peek struct {
	// Document returns the record document stored for runID, exactly as
	// stored, bypassing the columns.
	Document func(t testing.TB, s db.Store, runID string) []byte
	// ShardError returns the error stored for one shard.
	ShardError func(t testing.TB, s db.Store, runID, shardID string) *string
	// AgeClaim moves the claimed_at of key's idempotency claim back by d.
	AgeClaim func(t testing.TB, s db.Store, key string, d time.Duration)
	// AgeInstance moves the last heartbeat of a member back by d.
	AgeInstance func(t testing.TB, s db.Store, instanceID string, d time.Duration)
}

// Exercise runs the conformance suite against the dialect newURL's databases
// belong to. newURL returns the history URL of a fresh, empty database and
// arranges its removal when t ends.
//
// Tests that need a row to be old age it through peek rather than sleeping
// past a short window, so no assertion depends on how fast the machine is:
// what must stay live is given minutes, what must lapse is made old.
func Exercise(t *testing.T, newURL func(t testing.TB) string, peek Peek) {
	t.Helper()
	suites := []struct {
		name string
		run  func(t *testing.T, newURL func(t testing.TB) string)
	}{
		{"Open", exerciseOpen},
		{"Migrations", exerciseMigrations},
		{"Idempotency", func(t *testing.T, newURL func(t testing.TB) string) { exerciseIdempotency(t, newURL, peek) }},
		{"Runs", exerciseRuns},
		{"Record", func(t *testing.T, newURL func(t testing.TB) string) { exerciseRecord(t, newURL, peek) }},
		{"List", exerciseList},
		{"Delete", exerciseDelete},
		{"Leases", exerciseLeases},
		{"ClaimPending", exerciseClaimPending},
		{"Reclaim", exerciseReclaim},
		{"Finalize", exerciseFinalize},
		{"RunPath", exerciseRunPath},
		{"Cancel", exerciseCancel},
		{"Instances", func(t *testing.T, newURL func(t testing.TB) string) { exerciseInstances(t, newURL, peek) }},
		{"Shards", func(t *testing.T, newURL func(t testing.TB) string) { exerciseShards(t, newURL, peek) }},
		{"Audit", exerciseAudit},
		{"RunLogs", exerciseRunLogs},
		{"Purge", func(t *testing.T, newURL func(t testing.TB) string) { exercisePurge(t, newURL, peek) }},
	}
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			s.run(t, newURL)
		})
	}
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

func upsert(t testing.TB, s db.Store, recs ...*db.RunRecord) {
	t.Helper()
	for _, r := range recs {
		if err := s.RunUpsert(t.Context(), r); err != nil {
			t.Fatalf("upsert %s: %v", r.RunID, err)
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

// waitPast sleeps until t0+d has passed, so leases or windows that started at
// t0 with length d are expired. It waits; it never asserts on timing.
func waitPast(t0 time.Time, d time.Duration) {
	time.Sleep(time.Until(t0.Add(d)) + 20*time.Millisecond)
}
