package dbtest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/db"
)

func exerciseOpen(t *testing.T, newURL func(t testing.TB) string) {
	t.Run("Identity", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		name, _, err := db.ParseURL(url)
		if err != nil {
			t.Fatal(err)
		}
		s := open(t, url, db.Options{InstanceID: "inst-a"})
		if s.InstanceID() != "inst-a" {
			t.Errorf("InstanceID() = %q, want inst-a", s.InstanceID())
		}
		if s.Dialect() != name {
			t.Errorf("Dialect() = %q, want %q", s.Dialect(), name)
		}
		if err := s.Ping(t.Context()); err != nil {
			t.Errorf("Ping: %v", err)
		}
	})

	t.Run("GeneratedInstanceID", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		a := open(t, url, db.Options{})
		b := open(t, url, db.Options{})
		if a.InstanceID() == "" || a.InstanceID() == b.InstanceID() {
			t.Errorf("generated instance ids %q and %q: want distinct, non-empty", a.InstanceID(), b.InstanceID())
		}
	})

	t.Run("ReopenKeepsData", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		s := open(t, url, db.Options{InstanceID: "a"})
		submit(t, s, newRun("r1", db.StatusCompleted, now()))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s2 := open(t, url, db.Options{InstanceID: "a"})
		wantStatus(t, s2, "r1", db.StatusCompleted)
	})

	t.Run("NotFound", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		_, err := s.RunGet(t.Context(), "nope")
		if !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("RunGet of a missing run: %v, want ErrNotFound", err)
		}
		wantPermanent(t, "RunGet of a missing run", err, "nope")
	})

	// Arguments no retry can fix get the same Permanent verdict on every
	// dialect, so a caller's retry policy does not depend on the backend.
	t.Run("InvalidArgumentsArePermanent", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		_, err := s.RunFinalizeShardedParent(t.Context(), "r1", db.StatusRunning, now(), nil)
		wantPermanent(t, "RunFinalizeShardedParent with a running status", err, "r1")
		_, err = s.ShardFinalize(t.Context(), "r1", "s1", db.ShardResult{Status: db.ShardRunning})
		wantPermanent(t, "ShardFinalize with a running status", err, "r1/s1")
		_, err = s.RunFinish(t.Context(), db.RunFinal{Record: newRun("r1", db.StatusRunning, now())})
		wantPermanent(t, "RunFinish with a running status", err, "r1")
	})

	t.Run("ErrorsCarryVerdict", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := s.RunGet(ctx, "r1")
		if err == nil {
			t.Fatal("RunGet with a cancelled context succeeded")
		}
		var e *db.Error
		if !errors.As(err, &e) {
			t.Fatalf("error %v (%T) is not a *db.Error", err, err)
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v does not wrap context.Canceled", err)
		}
	})
}

// wantPermanent asserts err carries the Permanent verdict, is not retriable,
// and names subject.
func wantPermanent(t testing.TB, what string, err error, subject string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s succeeded, want an error", what)
	}
	if got := db.TransienceOf(err); got != db.Permanent {
		t.Errorf("%s: verdict %v, want permanent (error %v)", what, got, err)
	}
	if db.Retriable(err) {
		t.Errorf("%s: error %v is retriable", what, err)
	}
	if !strings.Contains(err.Error(), subject) {
		t.Errorf("%s: error %q does not name %q", what, err, subject)
	}
}
