package execution_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/server/admission"
	"github.com/faucet-dev/faucet/server/execution"
	st "github.com/faucet-dev/faucet/server/servicetest"
)

func TestFinalizeWritesTheTerminalRecordWithoutReadingIt(t *testing.T) {
	t.Parallel()
	s := st.Start(t, st.Options{})
	s.Store.FailGets.Store(true)
	res, err := s.Admission.Submit(context.Background(), admission.Request{Config: "7", ConfigFormat: "yaml", Name: st.Ptr("n")})
	if err != nil {
		t.Fatal(err)
	}
	rec := st.Await(t, s.Store.Store, res.RunID, db.StatusCompleted)
	if rec.RecordsWritten != 7 || rec.FinishedAt == nil || rec.StartedAt == nil || rec.Name == nil || *rec.Name != "n" {
		t.Fatalf("terminal record = %+v", rec)
	}
}

// TestAShortRunIsWrittenTwice: a run that ends before its start would be
// written is stored by its submit and its finish alone, the finish carrying
// its start; a longer one is marked running in the history while it runs.
func TestAShortRunIsWrittenTwice(t *testing.T) {
	t.Parallel()
	s := st.Start(t, st.Options{Exec: execution.Config{StartDelay: time.Hour}})
	rec := st.Await(t, s.Store, s.Submit(t, "3").RunID, db.StatusCompleted)
	if rec.StartedAt == nil || rec.StartedAt.After(*rec.FinishedAt) || rec.RecordsWritten != 3 {
		t.Fatalf("terminal record = %+v", rec)
	}
	if n := s.Store.Starts.Load(); n != 0 {
		t.Fatalf("the short run's start was written %d time(s) on its own", n)
	}

	long := st.Start(t, st.Options{Exec: execution.Config{StartDelay: time.Millisecond}})
	hold := long.Submit(t, "hold")
	st.Await(t, long.Store, hold.RunID, db.StatusRunning)
	if _, err := long.Exec.Cancel(context.Background(), hold.RunID); err != nil {
		t.Fatal(err)
	}
	st.Await(t, long.Store, hold.RunID, db.StatusCancelled)
}

// TestALocalRunIsRunningAsSoonAsItStarts: until its start is written the
// history holds the run queued, and this server answers for it as running.
func TestALocalRunIsRunningAsSoonAsItStarts(t *testing.T) {
	t.Parallel()
	s := st.Start(t, st.Options{Exec: execution.Config{StartDelay: time.Hour}})
	id := s.Submit(t, "hold").RunID
	testwait.Until(t, 30*time.Second, func() error {
		rec, err := s.Exec.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Status != db.StatusRunning || rec.StartedAt == nil || rec.ElapsedSecs == nil || rec.RecordsWritten != 3 {
			return fmt.Errorf("GET of the started run = %+v, want running with its start and 3 records", rec)
		}
		return nil
	})
	if rec, err := s.Store.RunGet(context.Background(), id); err != nil || rec.Status != db.StatusQueued {
		t.Fatalf("the history holds %+v (%v), want the run still queued", rec, err)
	}
	if _, err := s.Exec.Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if rec := st.Await(t, s.Store, id, db.StatusCancelled); rec.StartedAt == nil || rec.RecordsWritten != 3 {
		t.Fatalf("cancelled run = %+v, want its start and 3 records", rec)
	}
}

func TestShutdownFailsQueuedAndStopsRunning(t *testing.T) {
	t.Parallel()
	s := st.Start(t, st.Options{Exec: execution.Config{MaxConcurrent: 1}})
	running := s.Submit(t, "hold")
	st.Await(t, s.Store, running.RunID, db.StatusRunning)
	queued := s.Submit(t, "hold")
	if err := s.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{running.RunID, queued.RunID} {
		rec := st.Await(t, s.Store, id, db.StatusFailed)
		if rec.Error == nil || *rec.Error != execution.MsgShutdown {
			t.Fatalf("run %s after shutdown: %+v", id, rec)
		}
	}
	if _, err := s.Admission.Submit(context.Background(), admission.Request{Config: "1", ConfigFormat: "yaml"}); !errors.Is(err, admission.ErrShuttingDown) {
		t.Fatalf("submit after shutdown: %v", err)
	}
}

func TestRecordsWrittenIsLiveWhileARunExecutes(t *testing.T) {
	t.Parallel()
	s := st.Start(t, st.Options{})
	res := s.Submit(t, "hold")
	st.Await(t, s.Store, res.RunID, db.StatusRunning)
	testwait.Until(t, 30*time.Second, func() error {
		rec, err := s.Exec.Get(context.Background(), res.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if rec.RecordsWritten == 3 && rec.ElapsedSecs != nil {
			return nil
		}
		return fmt.Errorf("GET of the running run = %+v, want the 3 acknowledged records", rec)
	})
	if _, err := s.Exec.Cancel(context.Background(), res.RunID); err != nil {
		t.Fatal(err)
	}
	if rec := st.Await(t, s.Store, res.RunID, db.StatusCancelled); rec.RecordsWritten != 3 {
		t.Fatalf("cancelled run = %+v", rec)
	}
}

// TestARunThatIgnoresCancelIsFinalizedAfterTheGrace: a run whose connector
// hangs and never honours the cancel still ends, cancelled, once the flush
// grace is over, with the records it had reported.
func TestARunThatIgnoresCancelIsFinalizedAfterTheGrace(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	s := st.Start(t, st.Options{Engine: st.Engine{Gate: gate}, Exec: execution.Config{FlushGrace: 200 * time.Millisecond}})
	// Released before the stack stops, which waits for the hung connector.
	t.Cleanup(func() { close(gate) })
	res := s.Submit(t, "stuck")
	st.Await(t, s.Store, res.RunID, db.StatusRunning)
	if _, err := s.Exec.Cancel(context.Background(), res.RunID); err != nil {
		t.Fatal(err)
	}
	rec := st.Await(t, s.Store, res.RunID, db.StatusCancelled)
	if rec.RecordsWritten != 4 || rec.FinishedAt == nil {
		t.Fatalf("record after the grace = %+v, want cancelled with the 4 reported records", rec)
	}
}

// TestShutdownFinalizesAHungRunBeforeItsDeadline: shutdown with a deadline
// shortens the grace, so a run that ignores the stop is failed "server
// shutdown" and Stop returns before the deadline.
func TestShutdownFinalizesAHungRunBeforeItsDeadline(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	s := st.Start(t, st.Options{Engine: st.Engine{Gate: gate}})
	t.Cleanup(func() { close(gate) })
	res := s.Submit(t, "stuck")
	st.Await(t, s.Store, res.RunID, db.StatusRunning)
	if err := s.Stop(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Store.RunGet(context.Background(), res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != db.StatusFailed || rec.Error == nil || !strings.Contains(*rec.Error, "shutdown") {
		t.Fatalf("hung run after shutdown = %+v (error %v), want failed by the shutdown", rec, rec.Error)
	}
}

// TestFinalizedGetsWhatTheRunExecuted: the hook that follows a run's end
// (the catalog's) is told the plan the run executed and the engine's
// results, for a run that completed and for one cancelled mid-run, once
// the run has ended for everyone: a cancel made from the hook answers that
// it already ended.
func TestFinalizedGetsWhatTheRunExecuted(t *testing.T) {
	t.Parallel()
	finals := make(chan execution.Final, 2)
	var s *st.Stack
	s = st.Start(t, st.Options{Exec: execution.Config{Finalized: func(ctx context.Context, f execution.Final) {
		if out, err := s.Exec.Cancel(ctx, f.Record.RunID); err != nil || out != execution.AlreadyTerminal {
			t.Errorf("cancel of run %s from its Finalized hook: %v %v, want it already ended", f.Record.RunID, out, err)
		}
		finals <- f
	}}})
	done := s.Submit(t, "7").RunID
	f := <-finals
	if f.Record.RunID != done || f.Record.Status != db.StatusCompleted || f.Plan == nil || len(f.Plan.Invocations) != 1 ||
		len(f.Results) != 1 || f.Results[0].RowID != "7" || f.Results[0].RecordsWritten != 7 {
		t.Fatalf("final of a completed run = %+v", f)
	}
	if rec := st.Await(t, s.Store, done, db.StatusCompleted); rec.RecordsWritten != 7 {
		t.Fatalf("the record the hook followed = %+v", rec)
	}
	hold := s.Submit(t, "hold").RunID
	st.Await(t, s.Store, hold, db.StatusRunning)
	if _, err := s.Exec.Cancel(context.Background(), hold); err != nil {
		t.Fatal(err)
	}
	f = <-finals
	if f.Record.RunID != hold || f.Record.Status != db.StatusCancelled || f.Plan == nil || len(f.Results) != 1 || f.Results[0].RecordsWritten != 3 {
		t.Fatalf("final of a cancelled run = %+v", f)
	}
}

// TestARunWhoseEndLandedIsEndedToCancelAndDelete: between a run's terminal
// write landing and the executor letting it go, a client can already read it
// as ended; a cancel then answers that it ended, and a delete removes it.
func TestARunWhoseEndLandedIsEndedToCancelAndDelete(t *testing.T) {
	t.Parallel()
	s := st.Start(t, st.Options{})
	landed, release := make(chan struct{}), make(chan struct{})
	hook := func() {
		close(landed)
		<-release
	}
	s.Store.AfterFinish.Store(&hook)
	id := s.Submit(t, "3").RunID
	select {
	case <-landed:
	case <-time.After(30 * time.Second):
		t.Fatal("the run's end never landed")
	}
	defer close(release)
	ctx := context.Background()
	if rec, err := s.Exec.Get(ctx, id); err != nil || rec.Status != db.StatusCompleted {
		t.Fatalf("GET in the window = %+v (%v), want completed", rec, err)
	}
	if out, err := s.Exec.Cancel(ctx, id); err != nil || out != execution.AlreadyTerminal {
		t.Fatalf("cancel of the ended run = %v (%v), want AlreadyTerminal", out, err)
	}
	if err := s.Exec.Delete(ctx, id); err != nil {
		t.Fatalf("delete of the ended run: %v", err)
	}
	if _, err := s.Exec.Get(ctx, id); !errors.Is(err, execution.ErrNotFound) {
		t.Fatalf("GET after the delete: %v, want not found", err)
	}
}
