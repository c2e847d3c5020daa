package admission_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/server/admission"
	"github.com/faucet-dev/faucet/server/execution"
	st "github.com/faucet-dev/faucet/server/servicetest"
)

func yaml(config string) admission.Request {
	return admission.Request{Config: config, ConfigFormat: "yaml"}
}

func TestFailedRecordWriteReleasesClaimAndReservation(t *testing.T) {
	t.Parallel()
	s := st.Start(t, st.Options{Admission: admission.Config{MaxQueued: 1}})
	ctx := context.Background()
	req := yaml("3")
	req.IdempotencyKey = st.Ptr("k")
	s.Store.FailSubmits.Store(1)
	if _, err := s.Admission.Submit(ctx, req); err == nil {
		t.Fatal("submit succeeded although its record write failed")
	}
	if q := s.Admission.Stats().Queued; q != 0 {
		t.Fatalf("queue holds %d reservations after a failed submit", q)
	}
	res, err := s.Admission.Submit(ctx, req)
	if err != nil {
		t.Fatalf("resubmit after the failed write: %v", err)
	}
	if res.Replay {
		t.Fatal("the key still pointed at the run whose record was never written")
	}
	st.Await(t, s.Store, res.RunID, db.StatusCompleted)
}

func TestEarlyReturnsReleaseTheQueueSlot(t *testing.T) {
	t.Parallel()
	s := st.Start(t, st.Options{Admission: admission.Config{MaxQueued: 1}, Exec: execution.Config{MaxConcurrent: 1}})
	ctx := context.Background()
	keyed := func(config string) admission.Request {
		r := yaml(config)
		r.IdempotencyKey = st.Ptr("k")
		return r
	}
	first, err := s.Admission.Submit(ctx, keyed("1"))
	if err != nil {
		t.Fatal(err)
	}
	st.Await(t, s.Store, first.RunID, db.StatusCompleted)
	doctor := yaml("1")
	doctor.DoctorFirst = true
	badClock := yaml("1")
	badClock.Clock = st.Ptr("yesterday")
	cases := map[string]admission.Request{
		"conflict": keyed("2"), "replay": keyed("1"), "doctor fails": doctor, "bad config": yaml("bad"), "bad clock": badClock,
	}
	for name, req := range cases {
		res, err := s.Admission.Submit(ctx, req)
		switch name {
		case "replay":
			if err != nil || !res.Replay || res.RunID != first.RunID {
				t.Fatalf("replay: %+v %v", res, err)
			}
		case "conflict":
			if !errors.Is(err, admission.ErrIdempotencyConflict) {
				t.Fatalf("conflict: %v", err)
			}
		case "doctor fails":
			var de *admission.DoctorError
			if !errors.As(err, &de) || de.Report.OK {
				t.Fatalf("doctor: %v", err)
			}
		default:
			var ce *admission.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if q := s.Admission.Stats().Queued; q != 0 {
			t.Fatalf("%s left %d reservations", name, q)
		}
	}
	// The single slot is free: a hold run takes it, the next waits in the
	// queue's one place, and the one after is refused.
	hold := s.Submit(t, "hold")
	st.Await(t, s.Store, hold.RunID, db.StatusRunning)
	queued := s.Submit(t, "hold")
	if _, err := s.Admission.Submit(ctx, yaml("1")); !errors.Is(err, admission.ErrQueueFull) {
		t.Fatalf("third submit: %v, want ErrQueueFull", err)
	}
	for _, id := range []string{queued.RunID, hold.RunID} {
		if out, err := s.Exec.Cancel(ctx, id); err != nil || out != execution.CancelRequested {
			t.Fatalf("cancel %s: %v %v", id, out, err)
		}
		st.Await(t, s.Store, id, db.StatusCancelled)
	}
}

func TestConcurrentSubmitsOfOneKeyMakeOneRun(t *testing.T) {
	t.Parallel()
	s := st.Start(t, st.Options{})
	const n = 50
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req := yaml("5")
			req.IdempotencyKey = st.Ptr("same")
			res, err := s.Admission.Submit(context.Background(), req)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = res.RunID
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("different runs for one key: %v", ids)
		}
	}
	page, err := s.Store.RunList(context.Background(), db.ListFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Runs) != 1 {
		t.Fatalf("%d runs recorded, want 1", len(page.Runs))
	}
}

func TestSubmittedAtIsWhatTheRecordSays(t *testing.T) {
	t.Parallel()
	s := st.Start(t, st.Options{})
	res := s.Submit(t, "2")
	rec := st.Await(t, s.Store, res.RunID, db.StatusCompleted)
	if !rec.SubmittedAt.Equal(res.SubmittedAt) {
		t.Fatalf("submit answered %v, the record says %v", res.SubmittedAt, rec.SubmittedAt)
	}
}

func TestATransientRecordWriteFailureIsUnavailable(t *testing.T) {
	t.Parallel()
	s := st.Start(t, st.Options{})
	s.Store.Transient.Store(true)
	s.Store.FailSubmits.Store(1)
	_, err := s.Admission.Submit(context.Background(), yaml("1"))
	if !errors.Is(err, admission.ErrHistoryUnavailable) || strings.Contains(err.Error(), "injected") {
		t.Fatalf("submit during a database blip: %v, want ErrHistoryUnavailable without the driver's words", err)
	}
	if q := s.Admission.Stats().Queued; q != 0 {
		t.Fatalf("the refused submit left %d reservations", q)
	}
}

func TestIdempotencyFingerprintCoversClockAndTimeout(t *testing.T) {
	t.Parallel()
	s := st.Start(t, st.Options{})
	ctx := context.Background()
	base := yaml("1")
	base.IdempotencyKey, base.Clock, base.TimeoutSecs = st.Ptr("nightly"), st.Ptr("2026-01-01T00:00:00Z"), st.Ptr(int64(60))
	first, err := s.Admission.Submit(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	st.Await(t, s.Store, first.RunID, db.StatusCompleted)

	if res, err := s.Admission.Submit(ctx, base); err != nil || !res.Replay || res.RunID != first.RunID {
		t.Fatalf("replay with an equal clock: %+v %v", res, err)
	}
	changes := map[string]func(*admission.Request){
		"other clock": func(q *admission.Request) { q.Clock = st.Ptr("2026-01-02T00:00:00Z") },
		// The same instant in another offset renders another ${now.date}.
		"other offset":  func(q *admission.Request) { q.Clock = st.Ptr("2026-01-01T01:00:00+01:00") },
		"no clock":      func(q *admission.Request) { q.Clock = nil },
		"other timeout": func(q *admission.Request) { q.TimeoutSecs = st.Ptr(int64(61)) },
		"no timeout":    func(q *admission.Request) { q.TimeoutSecs = nil },
	}
	for name, change := range changes {
		req := base
		change(&req)
		if res, err := s.Admission.Submit(ctx, req); !errors.Is(err, admission.ErrIdempotencyConflict) {
			t.Fatalf("%s with the same key: %+v %v, want ErrIdempotencyConflict", name, res, err)
		}
	}
}

func TestClockIsRecordedInItsOffset(t *testing.T) {
	t.Parallel()
	s := st.Start(t, st.Options{})
	req := yaml("2")
	req.Clock = st.Ptr("2026-03-01T12:00:00+02:00")
	res, err := s.Admission.Submit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 0 {
		t.Fatalf("warnings = %q", res.Warnings)
	}
	rec := st.Await(t, s.Store, res.RunID, db.StatusCompleted)
	if rec.Clock == nil || *rec.Clock != "2026-03-01T12:00:00+02:00" || rec.RecordsWritten != 2 {
		t.Fatalf("record = %+v", rec)
	}
	if got := admission.RunClock(rec); !got.Equal(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)) || got.Format("-07:00") != "+02:00" {
		t.Fatalf("RunClock = %v", got)
	}
	plain := s.Submit(t, "2")
	prec := st.Await(t, s.Store, plain.RunID, db.StatusCompleted)
	if got := admission.RunClock(prec); !got.Equal(prec.SubmittedAt) {
		t.Fatalf("RunClock without a clock = %v, want the submit instant %v", got, prec.SubmittedAt)
	}
}
