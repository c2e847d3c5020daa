package dbtest

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

// Peek reads what a dialect stores but the Store does not return. Only the
// dialect's own package can, so its tests hand these hooks to
// ExerciseInternals.
type Peek struct {
	// Document returns the record document stored for runID, exactly as
	// stored, bypassing the columns.
	Document func(t testing.TB, s db.Store, runID string) []byte
	// ShardError returns the error stored for one shard.
	ShardError func(t testing.TB, s db.Store, runID, shardID string) *string
}

// ExerciseInternals runs the checks that need a Peek.
func ExerciseInternals(t *testing.T, newURL func(t testing.TB) string, peek Peek) {
	t.Run("RecordStaysInStepWithColumns", func(t *testing.T) {
		t.Parallel()
		exerciseRecord(t, newURL, peek.Document)
	})
	t.Run("ShardPoisonText", func(t *testing.T) {
		t.Parallel()
		exerciseShardPoison(t, newURL, peek.ShardError)
	})
}

// exerciseRecord drives runs through every statement that changes run
// columns in SQL alone (claim, requeue, poison, cancel, recovery, sharded
// finalize, the sweep) and proves after each that the stored record document
// still says what the columns say, so a reader of either sees the same run.
func exerciseRecord(t *testing.T, newURL func(t testing.TB) string, document func(t testing.TB, s db.Store, runID string) []byte) {
	const lease = 150 * time.Millisecond
	url := newURL(t)
	a := open(t, url, db.Options{InstanceID: "a", LeaseTTL: lease})
	b := open(t, url, db.Options{InstanceID: "b", LeaseTTL: lease})
	ctx := t.Context()
	started := now().Add(-time.Minute)
	put := func(runID string, status db.RunStatus) {
		t.Helper()
		rec := &db.RunRecord{RunID: runID, Status: status, SubmittedAt: now(), StartedAt: &started,
			Labels: map[string]string{"k": "v"}, Name: ptr("n")}
		upsert(t, a, rec)
	}
	inStep := func(runID, after string) {
		t.Helper()
		doc := documentRecord(t, document(t, a, runID))
		cols := normalRecord(*get(t, a, runID))
		if !reflect.DeepEqual(doc, cols) {
			sameJSON(t, "after "+after+" the record document of "+runID+" (want: its columns)", cols, doc)
			t.Fatalf("after %s the record of %s disagrees with its columns\ndocument: %+v\ncolumns:  %+v", after, runID, doc, cols)
		}
	}
	expire := func() { waitPast(time.Now(), lease) }
	check := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	put("claimed", db.StatusPending)
	check(a.RunClaimPending(ctx, 1))
	inStep("claimed", "claim")
	check(b.RunRequestCancel(ctx, "claimed"))
	expire()
	check(b.RunReclaimOrphans(ctx, 1))
	inStep("claimed", "requeue")
	check(a.RunClaimPending(ctx, 1))
	expire()
	check(b.RunReclaimOrphans(ctx, 1))
	inStep("claimed", "poison")

	put("pending", db.StatusPending)
	check(b.RunCancelPending(ctx, "pending"))
	inStep("pending", "cancel pending")

	put("orphan", db.StatusRunning)
	expire()
	check(b.RunRecoverOrphans(ctx))
	inStep("orphan", "recovery")

	for _, runID := range []string{"parent", "swept"} {
		put(runID, db.StatusSharded)
		check(a.ShardInsert(ctx, runID, []db.ShardInsert{{ShardID: "s1", Descriptor: []byte(`{}`)}, {ShardID: "s2", Descriptor: []byte(`{}`)}}))
	}
	shards, err := b.ShardClaim(ctx, 10)
	check(shards, err)
	for _, sh := range shards {
		check(b.ShardFinalize(ctx, sh.RunID, sh.ShardID, db.ShardResult{Status: db.ShardCompleted, RecordsWritten: 21}))
	}
	check(b.RunFinalizeShardedParent(ctx, "parent", db.StatusCompleted, time.Now(), nil))
	inStep("parent", "sharded-parent finalize")
	check(b.ShardFinalizeCompletedParents(ctx))
	inStep("swept", "sweep")
	if r := get(t, a, "swept"); r.Status != db.StatusCompleted || r.RecordsWritten != 42 {
		t.Fatalf("swept parent: status %s, %d records; want completed, 42", r.Status, r.RecordsWritten)
	}
}

// exerciseShardPoison lets a shard's lease lapse on each of its executions
// under a cap of one requeue: the first reclaim requeues it, the second fails
// it as poison with an error that counts exactly that. (The shard conformance
// tests have no way to read a shard's error, hence its place here.)
func exerciseShardPoison(t *testing.T, newURL func(t testing.TB) string, shardError func(t testing.TB, s db.Store, runID, shardID string) *string) {
	url := newURL(t)
	dying := open(t, url, db.Options{InstanceID: "dying", LeaseTTL: shortLease})
	peer := open(t, url, db.Options{InstanceID: "peer"})
	upsert(t, peer, newRun("r1", db.StatusSharded, now()))
	insertShards(t, peer, "r1", shardSpecs("s", 1, nil)...)
	const maxAttempts = 1
	for attempt := range maxAttempts + 1 {
		if got := shardClaim(t, dying, 1); len(got) != 1 || got[0].Attempt != attempt {
			t.Fatalf("claim %d: %+v", attempt, got)
		}
		waitPast(time.Now(), shortLease)
		rep, err := peer.ShardReclaimOrphans(t.Context(), maxAttempts)
		if err != nil {
			t.Fatal(err)
		}
		if attempt < maxAttempts {
			wantReport(t, "reclaim below the cap", rep, 1, 0)
		} else {
			wantReport(t, "reclaim at the cap", rep, 0, 1)
		}
	}
	if p := progress(t, peer, "r1"); p.Failed != 1 || !p.AllTerminal() {
		t.Fatalf("progress %+v, want the shard failed", p)
	}
	wantError(t, "poisoned shard", shardError(t, peer, "r1", "s-0000"),
		"poison shard: its owner's lease lapsed during attempt 2 (requeue count 1, cap 1); not retried")
}

// documentRecord decodes a stored record document alone.
func documentRecord(t testing.TB, raw []byte) db.RunRecord {
	t.Helper()
	var rec db.RunRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatalf("decode record document %s: %v", raw, err)
	}
	return normalRecord(rec)
}

// normalRecord puts rec's timestamps in UTC and its empty collections in one
// form, the differences JSON and the columns may legitimately disagree on.
func normalRecord(rec db.RunRecord) db.RunRecord {
	utc := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		return ptr(t.UTC())
	}
	rec.SubmittedAt = rec.SubmittedAt.UTC()
	rec.StartedAt = utc(rec.StartedAt)
	rec.FinishedAt = utc(rec.FinishedAt)
	if len(rec.Labels) == 0 {
		rec.Labels = map[string]string{}
	}
	if len(rec.Invocations) == 0 {
		rec.Invocations = []db.InvocationRecord{}
	}
	return rec
}
