package dbtest

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

// exerciseRecord drives runs through every statement that changes run
// columns in SQL alone (claim, requeue, poison, cancel, recovery, sharded
// finalize, the sweep) and proves after each that the stored record document
// still says what the columns say, so a reader of either sees the same run.
func exerciseRecord(t *testing.T, newURL func(t testing.TB) string, peek Peek) {
	t.Run("StaysInStepWithColumns", func(t *testing.T) {
		t.Parallel()
		// a's leases lapse for b to reclaim and recover; b's own stay live.
		const lease = 150 * time.Millisecond
		url := newURL(t)
		a := open(t, url, db.Options{InstanceID: "a", LeaseTTL: lease})
		b := open(t, url, db.Options{InstanceID: "b", LeaseTTL: liveLease})
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
			doc := documentRecord(t, peek.Document(t, a, runID))
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
	})
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
