package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

// TestARunThatIgnoresCancelIsFinalizedAfterTheGrace: a run whose connector
// hangs and never honours the cancel still ends, cancelled, once the flush
// grace is over, with the records it had reported.
func TestARunThatIgnoresCancelIsFinalizedAfterTheGrace(t *testing.T) {
	gate := make(chan struct{})
	t.Cleanup(func() { close(gate) })
	r, fs := newTestRunnerWith(t, Config{FlushGrace: 200 * time.Millisecond}, testEngine{gate: gate})
	res, err := r.Submit(context.Background(), SubmitRequest{Config: "stuck", ConfigFormat: "yaml"})
	if err != nil {
		t.Fatal(err)
	}
	await(t, fs.Store, res.RunID, db.StatusRunning)
	if _, err := r.Cancel(context.Background(), res.RunID); err != nil {
		t.Fatal(err)
	}
	rec := await(t, fs.Store, res.RunID, db.StatusCancelled)
	if rec.RecordsWritten != 4 || rec.FinishedAt == nil {
		t.Fatalf("record after the grace = %+v, want cancelled with the 4 reported records", rec)
	}
}

// TestShutdownFinalizesAHungRunBeforeItsDeadline: shutdown with a deadline
// shortens the grace, so a run that ignores the stop is failed "server
// shutdown" and Shutdown returns before the deadline.
func TestShutdownFinalizesAHungRunBeforeItsDeadline(t *testing.T) {
	gate := make(chan struct{})
	t.Cleanup(func() { close(gate) })
	r, fs := newTestRunnerWith(t, Config{}, testEngine{gate: gate})
	res, err := r.Submit(context.Background(), SubmitRequest{Config: "stuck", ConfigFormat: "yaml"})
	if err != nil {
		t.Fatal(err)
	}
	await(t, fs.Store, res.RunID, db.StatusRunning)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := r.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	rec, err := fs.Store.RunGet(context.Background(), res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != db.StatusFailed || rec.Error == nil || !strings.Contains(*rec.Error, "shutdown") {
		t.Fatalf("hung run after shutdown = %+v (error %v), want failed by the shutdown", rec, rec.Error)
	}
}
