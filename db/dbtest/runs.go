package dbtest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

// fullRun is a run record with every field set, with timestamps carrying
// nanoseconds and a non-UTC zone that the store must normalise.
func fullRun(id string) *db.RunRecord {
	zone := time.FixedZone("UTC+2", 2*3600)
	submitted := time.Now().Add(-time.Minute).In(zone)
	started := submitted.Add(1500 * time.Millisecond)
	finished := started.Add(2*time.Second + 123456789)
	return &db.RunRecord{
		RunID:          id,
		Name:           ptr("nightly-orders"),
		Labels:         map[string]string{"team": "data", "env": "prod"},
		Status:         db.StatusCompleted,
		SubmittedAt:    submitted,
		StartedAt:      &started,
		FinishedAt:     &finished,
		RecordsWritten: 4200,
		Invocations: []db.InvocationRecord{
			{RowID: "row-1", ParentRecordKey: ptr("k1"), RunID: id + "-1", RecordsWritten: 4000, DurationMS: 1900},
			{RowID: "row-2", RecordsWritten: 200, DurationMS: 120, Error: ptr("partial: 3 records rejected")},
		},
		Error:           ptr("1 of 2 invocations failed"),
		IdempotencyKey:  ptr("idem-1"),
		DoctorReport:    json.RawMessage(`{"checks": [{"name": "source", "ok": true}], "ok": true}`),
		Attempt:         2,
		TemplateID:      ptr("nightly"),
		TemplateVersion: ptr(3),
		ConfigBody:      ptr("version: 1\npipeline:\n  source: {kind: csv}\n"),
		ConfigFormat:    ptr("yaml"),
		TimeoutSecs:     ptr(int64(600)),
		Clock:           ptr("2024-01-02T03:04:05Z"),
		Concurrency:     ptr(4),
		Callback:        json.RawMessage(`{"url": "https://example.com/hook", "on": ["completed"]}`),
	}
}

// normalized is rec as every store must return it: timestamps in UTC at
// microsecond precision, elapsed_secs the time between them.
func normalized(rec *db.RunRecord) *db.RunRecord {
	out := *rec
	out.SubmittedAt = rec.SubmittedAt.UTC().Truncate(time.Microsecond)
	norm := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		v := t.UTC().Truncate(time.Microsecond)
		return &v
	}
	out.StartedAt = norm(rec.StartedAt)
	out.FinishedAt = norm(rec.FinishedAt)
	out.ElapsedSecs = nil
	if out.StartedAt != nil && out.FinishedAt != nil {
		out.ElapsedSecs = ptr(float64(out.FinishedAt.Sub(*out.StartedAt).Microseconds()) / 1e6)
	}
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	if out.Invocations == nil {
		out.Invocations = []db.InvocationRecord{}
	}
	return &out
}

// wantUTC fails t unless every timestamp of r is in UTC.
func wantUTC(t testing.TB, r *db.RunRecord) {
	t.Helper()
	for name, ts := range map[string]*time.Time{"submitted_at": &r.SubmittedAt, "started_at": r.StartedAt, "finished_at": r.FinishedAt} {
		if ts != nil && ts.Location() != time.UTC {
			t.Errorf("%s is in %v, want UTC", name, ts.Location())
		}
	}
}

func exerciseRuns(t *testing.T, newURL func(t testing.TB) string) {
	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		rec := fullRun("r1")
		submit(t, s, rec)
		got := get(t, s, "r1")
		sameJSON(t, "run record", normalized(rec), got)
		wantUTC(t, got)
		if !got.SubmittedAt.Equal(rec.SubmittedAt.Truncate(time.Microsecond)) {
			t.Errorf("submitted_at %v, want %v", got.SubmittedAt, rec.SubmittedAt.Truncate(time.Microsecond))
		}
	})

	t.Run("MinimalRoundTrip", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		rec := &db.RunRecord{RunID: "r1", Status: db.StatusQueued, SubmittedAt: time.Now()}
		submit(t, s, rec)
		got := get(t, s, "r1")
		sameJSON(t, "run record", normalized(rec), got)
		b, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		var wire map[string]any
		if err := json.Unmarshal(b, &wire); err != nil {
			t.Fatal(err)
		}
		if _, ok := wire["labels"].(map[string]any); !ok {
			t.Errorf("labels marshals as %v, want an object", wire["labels"])
		}
		if _, ok := wire["invocations"].([]any); !ok {
			t.Errorf("invocations marshals as %v, want an array", wire["invocations"])
		}
	})

	t.Run("SubmitRefusesAnExistingRun", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		rec := fullRun("r1")
		submit(t, s, rec)
		again := newRun("r1", db.StatusQueued, now())
		wantPermanent(t, "a second submit of one run id", s.RunSubmit(t.Context(), again, nil), "run submit")
		sameJSON(t, "the first submit's record", normalized(rec), get(t, s, "r1"))
	})

	t.Run("TemplateIDAndVersionGoTogether", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		onlyID := newRun("only-id", db.StatusQueued, now())
		onlyID.TemplateID = ptr("tpl")
		onlyVersion := newRun("only-version", db.StatusQueued, now())
		onlyVersion.TemplateVersion = ptr(1)
		for _, rec := range []*db.RunRecord{onlyID, onlyVersion} {
			wantPermanent(t, "a run naming half a template version", s.RunSubmit(t.Context(), rec, nil), "run submit")
			if _, err := s.RunGet(t.Context(), rec.RunID); !errors.Is(err, db.ErrNotFound) {
				t.Fatalf("run %s was written: %v", rec.RunID, err)
			}
		}
	})

	t.Run("ElapsedIsDerivedFromStartAndFinish", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		started := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
		finished := started.Add(90*time.Minute + 654321*time.Microsecond)
		done := newRun("done", db.StatusCompleted, now())
		done.StartedAt, done.FinishedAt, done.ElapsedSecs = &started, &finished, ptr(1.0)
		neverStarted := newRun("never-started", db.StatusCancelled, now())
		neverStarted.FinishedAt = &finished
		running := newRun("running", db.StatusRunning, now())
		running.StartedAt = &started
		submit(t, s, done, neverStarted, running)
		// The microseconds the timestamps keep, exactly.
		if r := get(t, s, "done"); r.ElapsedSecs == nil || *r.ElapsedSecs != 5400.654321 {
			t.Fatalf("elapsed_secs %v, want 5400.654321", r.ElapsedSecs)
		}
		for _, id := range []string{"never-started", "running"} {
			if r := get(t, s, id); r.ElapsedSecs != nil {
				t.Fatalf("run %s: elapsed_secs %v, want none", id, *r.ElapsedSecs)
			}
		}
	})

	t.Run("EveryStatusRoundTrips", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		for _, st := range db.AllStatuses {
			submit(t, s, newRun("r-"+string(st), st, now()))
		}
		for _, st := range db.AllStatuses {
			wantStatus(t, s, "r-"+string(st), st)
		}
	})

	t.Run("VisibleAcrossStores", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		a := open(t, url, db.Options{InstanceID: "a"})
		b := open(t, url, db.Options{InstanceID: "b"})
		rec := fullRun("r1")
		submit(t, a, rec)
		sameJSON(t, "record read by another instance", normalized(rec), get(t, b, "r1"))
	})
}
