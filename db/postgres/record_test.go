package postgres

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/testpg"
)

// documentOnly decodes a run from its jsonb record alone, ignoring the
// columns, with timestamps in UTC.
func documentOnly(t *testing.T, raw []byte) db.RunRecord {
	t.Helper()
	var rec db.RunRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	rec.SubmittedAt = rec.SubmittedAt.UTC()
	rec.StartedAt = utcPtr(rec.StartedAt)
	rec.FinishedAt = utcPtr(rec.FinishedAt)
	if rec.Labels == nil {
		rec.Labels = map[string]string{}
	}
	if rec.Invocations == nil {
		rec.Invocations = []db.InvocationRecord{}
	}
	return rec
}

// wantInStep fails t unless the stored document of runID says what its
// columns say.
func wantInStep(t *testing.T, s *Store, runID, after string) {
	t.Helper()
	row, err := s.q.RunGet(t.Context(), runID)
	if err != nil {
		t.Fatal(err)
	}
	fromColumns, err := decodeRun(row)
	if err != nil {
		t.Fatal(err)
	}
	if doc := documentOnly(t, row.Record); !reflect.DeepEqual(doc, fromColumns) {
		t.Fatalf("after %s the record of %s disagrees with its columns\ndocument: %+v\ncolumns:  %+v", after, runID, doc, fromColumns)
	}
}

// TestRecordStaysInStepWithColumns drives a run through every statement that
// changes columns in SQL alone and checks the jsonb record follows.
func TestRecordStaysInStepWithColumns(t *testing.T) {
	const lease = 150 * time.Millisecond
	dsn := testpg.Database(t)
	open := func(instance string) *Store {
		st, err := Open(t.Context(), dsn, db.Options{InstanceID: instance, LeaseTTL: lease})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st.(*Store)
	}
	a, b := open("a"), open("b")
	ctx := t.Context()
	started := now().Add(-time.Minute)
	upsert := func(runID string, status db.RunStatus) {
		t.Helper()
		rec := &db.RunRecord{RunID: runID, Status: status, SubmittedAt: now(), StartedAt: &started,
			Labels: map[string]string{"k": "v"}, Name: ptr("n")}
		if err := a.RunUpsert(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	expire := func() { time.Sleep(lease + 50*time.Millisecond) }
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	upsert("claimed", db.StatusPending)
	_, err := a.RunClaimPending(ctx, 1)
	check(err)
	wantInStep(t, a, "claimed", "claim")
	_, err = b.RunRequestCancel(ctx, "claimed")
	check(err)
	expire()
	_, err = b.RunReclaimOrphans(ctx, 1)
	check(err)
	wantInStep(t, a, "claimed", "requeue")
	_, err = a.RunClaimPending(ctx, 1)
	check(err)
	expire()
	_, err = b.RunReclaimOrphans(ctx, 1)
	check(err)
	wantInStep(t, a, "claimed", "poison")

	upsert("pending", db.StatusPending)
	_, err = b.RunCancelPending(ctx, "pending")
	check(err)
	wantInStep(t, a, "pending", "cancel pending")

	upsert("orphan", db.StatusRunning)
	expire()
	_, err = b.RunRecoverOrphans(ctx)
	check(err)
	wantInStep(t, a, "orphan", "recovery")

	for _, runID := range []string{"parent", "swept"} {
		upsert(runID, db.StatusSharded)
		_, err = a.ShardInsert(ctx, runID, []db.ShardInsert{{ShardID: "s1", Descriptor: []byte(`{}`)}, {ShardID: "s2", Descriptor: []byte(`{}`)}})
		check(err)
	}
	shards, err := b.ShardClaim(ctx, 10)
	check(err)
	for _, sh := range shards {
		_, err := b.ShardFinalize(ctx, sh.RunID, sh.ShardID, db.ShardResult{Status: db.ShardCompleted, RecordsWritten: 21})
		check(err)
	}
	_, err = b.RunFinalizeShardedParent(ctx, "parent", db.StatusCompleted, time.Now(), nil)
	check(err)
	wantInStep(t, a, "parent", "sharded-parent finalize")
	_, err = b.ShardFinalizeCompletedParents(ctx)
	check(err)
	wantInStep(t, a, "swept", "sweep")
	if r, err := a.RunGet(ctx, "swept"); err != nil || r.Status != db.StatusCompleted || r.RecordsWritten != 42 {
		t.Fatalf("swept parent: %+v, %v", r, err)
	}
}

func ptr[T any](v T) *T { return &v }
