package dbtest

import (
	"sync"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

func claim(t testing.TB, s db.Store, key, fp, runID string, window time.Duration) db.Claim {
	t.Helper()
	c, err := s.IdempotencyClaim(t.Context(), key, fp, runID, window)
	if err != nil {
		t.Fatalf("claim %s for %s: %v", key, runID, err)
	}
	return c
}

func wantClaim(t testing.TB, got db.Claim, outcome db.ClaimOutcome, runID string) {
	t.Helper()
	if got.Outcome != outcome || (outcome == db.ClaimReplay && got.RunID != runID) {
		t.Fatalf("claim = %v %q, want %v %q", got.Outcome, got.RunID, outcome, runID)
	}
}

func exerciseIdempotency(t *testing.T, newURL func(t testing.TB) string) {
	const hour = time.Hour

	t.Run("FreshReplayConflict", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		wantClaim(t, claim(t, s, "k", "fp1", "r1", hour), db.ClaimFresh, "")
		wantClaim(t, claim(t, s, "k", "fp1", "r2", hour), db.ClaimReplay, "r1")
		wantClaim(t, claim(t, s, "k", "fp2", "r3", hour), db.ClaimConflict, "")
		// Keys are independent.
		wantClaim(t, claim(t, s, "other", "fp2", "r4", hour), db.ClaimFresh, "")
	})

	t.Run("ExpiredClaimIsTakenOver", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		wantClaim(t, claim(t, s, "k", "fp1", "r1", hour), db.ClaimFresh, "")
		time.Sleep(30 * time.Millisecond)
		// Seen through a 10ms window the claim has expired: a different
		// payload takes the key over instead of conflicting.
		wantClaim(t, claim(t, s, "k", "fp2", "r2", 10*time.Millisecond), db.ClaimFresh, "")
		wantClaim(t, claim(t, s, "k", "fp2", "r3", hour), db.ClaimReplay, "r2")
		wantClaim(t, claim(t, s, "k", "fp1", "r4", hour), db.ClaimConflict, "")
	})

	t.Run("NonPositiveWindowNeverExpires", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		wantClaim(t, claim(t, s, "k", "fp1", "r1", 0), db.ClaimFresh, "")
		time.Sleep(5 * time.Millisecond)
		wantClaim(t, claim(t, s, "k", "fp1", "r2", 0), db.ClaimReplay, "r1")
		wantClaim(t, claim(t, s, "k", "fp2", "r3", -time.Second), db.ClaimConflict, "")
	})

	t.Run("Release", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		wantClaim(t, claim(t, s, "k1", "fp", "r1", hour), db.ClaimFresh, "")
		wantClaim(t, claim(t, s, "k2", "fp", "r1", hour), db.ClaimFresh, "")
		wantClaim(t, claim(t, s, "k3", "fp", "r9", hour), db.ClaimFresh, "")
		if err := s.IdempotencyRelease(t.Context(), "r1"); err != nil {
			t.Fatal(err)
		}
		// Both claims of r1 are gone; r9's is untouched.
		wantClaim(t, claim(t, s, "k1", "fp", "r2", hour), db.ClaimFresh, "")
		wantClaim(t, claim(t, s, "k2", "fp", "r2", hour), db.ClaimFresh, "")
		wantClaim(t, claim(t, s, "k3", "fp", "r2", hour), db.ClaimReplay, "r9")
		// Releasing a run with no claim is not an error, and releasing the old
		// run id again does not touch the new run's claims.
		if err := s.IdempotencyRelease(t.Context(), "r1"); err != nil {
			t.Fatal(err)
		}
		wantClaim(t, claim(t, s, "k1", "fp", "r3", hour), db.ClaimReplay, "r2")
	})

	t.Run("ConcurrentSameKey", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		stores := []db.Store{open(t, url, db.Options{InstanceID: "a"}), open(t, url, db.Options{InstanceID: "b"})}
		const n = 50
		claims := make([]db.Claim, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				claims[i], errs[i] = stores[i%2].IdempotencyClaim(t.Context(), "k", "fp", id("r", i), hour)
			})
		}
		close(start)
		wg.Wait()
		winner := ""
		for i, c := range claims {
			if errs[i] != nil {
				t.Fatalf("claim %d: %v", i, errs[i])
			}
			if c.Outcome == db.ClaimFresh {
				if winner != "" {
					t.Fatalf("two fresh claims: %s and %s", winner, id("r", i))
				}
				winner = id("r", i)
			}
		}
		if winner == "" {
			t.Fatal("no claim was fresh")
		}
		for i, c := range claims {
			if id("r", i) != winner {
				wantClaim(t, c, db.ClaimReplay, winner)
			}
		}
	})

	t.Run("ConcurrentMixedFingerprints", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		const n = 50
		claims := make([]db.Claim, n)
		errs := make([]error, n)
		fps := func(i int) string {
			if i%2 == 0 {
				return "even"
			}
			return "odd"
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				claims[i], errs[i] = s.IdempotencyClaim(t.Context(), "k", fps(i), id("r", i), hour)
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, c := range claims {
			if errs[i] != nil {
				t.Fatalf("claim %d: %v", i, errs[i])
			}
			if c.Outcome == db.ClaimFresh {
				if winner >= 0 {
					t.Fatalf("two fresh claims: %d and %d", winner, i)
				}
				winner = i
			}
		}
		if winner < 0 {
			t.Fatal("no claim was fresh")
		}
		for i, c := range claims {
			switch {
			case i == winner:
			case fps(i) == fps(winner):
				wantClaim(t, c, db.ClaimReplay, id("r", winner))
			default:
				wantClaim(t, c, db.ClaimConflict, "")
			}
		}
	})

	t.Run("ConcurrentTakeoverHasOneWinner", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		stores := []db.Store{open(t, url, db.Options{InstanceID: "a"}), open(t, url, db.Options{InstanceID: "b"})}
		wantClaim(t, claim(t, stores[0], "k", "old", "r-old", hour), db.ClaimFresh, "")
		// The old claim is older than the window below; the winner's new claim
		// is far younger, so every other caller replays it.
		const window = 2 * time.Second
		waitPast(time.Now(), window)
		const n = 30
		claims := make([]db.Claim, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				claims[i], errs[i] = stores[i%2].IdempotencyClaim(t.Context(), "k", "new", id("r", i), window)
			})
		}
		close(start)
		wg.Wait()
		fresh := 0
		winner := ""
		for i, c := range claims {
			if errs[i] != nil {
				t.Fatalf("claim %d: %v", i, errs[i])
			}
			if c.Outcome == db.ClaimFresh {
				fresh++
				winner = id("r", i)
			}
		}
		if fresh != 1 {
			t.Fatalf("%d callers took the expired claim over, want exactly 1", fresh)
		}
		for i, c := range claims {
			if id("r", i) != winner {
				wantClaim(t, c, db.ClaimReplay, winner)
			}
		}
	})
}
