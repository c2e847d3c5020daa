package dbtest

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/faucet-dev/faucet/db"
)

// submissionKeys are the keys a stored submission may hold: what never
// changes after submit.
var submissionKeys = []string{"callback", "clock", "concurrency", "config_body", "config_format", "doctor_report", "timeout_secs"}

// exerciseSubmission drives runs through every statement that changes a run
// (start, claim, progress, cancel, requeue, release, shard, finish, the
// sweep, recovery) and proves that the stored submission document is the
// one written at submit, byte for byte as a JSON value, and holds nothing a
// column holds: each fact of a run is stored once.
func exerciseSubmission(t *testing.T, newURL func(t testing.TB) string, peek Peek) {
	t.Run("NeverChangesAfterSubmit", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		url := newURL(t)
		a := member(t, url, clk, "a", shortLease)
		b := member(t, url, clk, "b", liveLease)
		ctx := t.Context()
		check := func(_ any, err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		submitted := map[string]any{}
		put := func(runID string, status db.RunStatus) {
			t.Helper()
			rec := fullRun(runID)
			rec.Status, rec.StartedAt, rec.FinishedAt, rec.Error, rec.Invocations, rec.Attempt = status, nil, nil, nil, nil, 0
			submit(t, a, rec)
			doc := decodeDoc(t, peek.Submission(t, url, runID))
			for key := range doc {
				if !slices.Contains(submissionKeys, key) {
					t.Fatalf("the submission of %s holds %q, which a column holds", runID, key)
				}
			}
			if len(doc) != len(submissionKeys) {
				t.Fatalf("the submission of %s is %v, want every one of %v", runID, doc, submissionKeys)
			}
			submitted[runID] = doc
		}
		unchanged := func(runID, after string) {
			t.Helper()
			if got := decodeDoc(t, peek.Submission(t, url, runID)); !reflect.DeepEqual(got, submitted[runID]) {
				t.Fatalf("after %s the submission of %s changed\nsubmitted: %v\n   stored: %v", after, runID, submitted[runID], got)
			}
		}

		put("local", db.StatusQueued)
		check(a.RunStart(ctx, "local", now()))
		unchanged("local", "start")
		rec := get(t, a, "local")
		rec.Status, rec.RecordsWritten = db.StatusCompleted, 5
		rec.Invocations = []db.InvocationRecord{{RowID: "default", RecordsWritten: 5}}
		check(a.RunFinish(ctx, db.RunFinal{Record: rec, Lines: logLines(1, 2, now())}))
		unchanged("local", "finish")

		put("claimed", db.StatusPending)
		check(a.RunClaimPending(ctx, 1))
		unchanged("claimed", "claim")
		check(a.RunSetProgress(ctx, map[string]int64{"claimed": 3}))
		unchanged("claimed", "progress")
		check(b.RunRequestCancel(ctx, "claimed"))
		unchanged("claimed", "cancel request")
		lapse(clk)
		check(b.RunRequeueLapsed(ctx, 1))
		unchanged("claimed", "requeue")
		check(a.RunClaimPending(ctx, 1))
		check(a.RunRelease(ctx, "claimed"))
		unchanged("claimed", "release")
		check(a.RunClaimPending(ctx, 1))
		lapse(clk)
		check(b.RunRequeueLapsed(ctx, 1))
		unchanged("claimed", "poison")

		put("pending", db.StatusPending)
		check(b.RunCancelPending(ctx, "pending"))
		unchanged("pending", "cancel pending")

		put("orphan", db.StatusRunning)
		lapse(clk)
		check(b.RunFailLapsed(ctx))
		unchanged("orphan", "fail lapsed")

		put("crashed", db.StatusQueued)
		check(b.RunFailUnfinished(ctx, "crashed"))
		unchanged("crashed", "fail unfinished")

		put("owned", db.StatusPending)
		claimed := claimPending(t, a, 1)
		claimed[0].Status = db.StatusCompleted
		check(a.RunFinish(ctx, db.RunFinal{Record: &claimed[0], Owned: true}))
		unchanged("owned", "owned finish")

		for _, runID := range []string{"parent", "swept"} {
			put(runID, db.StatusPending)
			claimPending(t, b, 1)
			check(b.RunShard(ctx, runID, shardSpecs("s", 2, nil)))
			unchanged(runID, "shard")
		}
		finishAll(t, b, func(db.ClaimedShard) db.ShardResult {
			return db.ShardResult{Status: db.ShardCompleted, RecordsWritten: 21}
		})
		check(b.RunFinalizeShardedParent(ctx, "parent", db.StatusCompleted, now(), nil))
		unchanged("parent", "sharded-parent finalize")
		check(b.ShardFinalizeCompletedParents(ctx))
		unchanged("swept", "sweep")
		if r := get(t, a, "swept"); r.Status != db.StatusCompleted || r.RecordsWritten != 42 {
			t.Fatalf("swept parent: status %s, %d records; want completed, 42", r.Status, r.RecordsWritten)
		}
	})
}

// decodeDoc decodes a stored JSON document as a generic value, so two
// documents compare equal whatever their key order and spacing.
func decodeDoc(t testing.TB, raw []byte) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("decode stored document %s: %v", raw, err)
	}
	return doc
}
