package dbtest

import (
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

// wantClaim asserts the outcome and the run id, which is set on Replay only:
// Fresh and Conflict carry none.
func wantClaim(t testing.TB, got db.Claim, outcome db.ClaimOutcome, runID string) {
	t.Helper()
	if outcome != db.ClaimReplay && runID != "" {
		t.Fatalf("wantClaim(%v, %q): only a replay names a run", outcome, runID)
	}
	if got.Outcome != outcome || got.RunID != runID {
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
		clk := newClock()
		s := open(t, newURL(t), db.Options{InstanceID: "a", Clock: clk.Now})
		wantClaim(t, claim(t, s, "k", "fp1", "r1", hour), db.ClaimFresh, "")
		clk.Advance(time.Minute)
		// Through a window of a minute the claim is live: a different
		// payload conflicts. A microsecond later it has expired, and the
		// payload takes the key over instead.
		wantClaim(t, claim(t, s, "k", "fp2", "r2", time.Minute), db.ClaimConflict, "")
		clk.Advance(time.Microsecond)
		wantClaim(t, claim(t, s, "k", "fp2", "r2", time.Minute), db.ClaimFresh, "")
		wantClaim(t, claim(t, s, "k", "fp2", "r3", hour), db.ClaimReplay, "r2")
		wantClaim(t, claim(t, s, "k", "fp1", "r4", hour), db.ClaimConflict, "")
	})

	t.Run("NonPositiveWindowNeverExpires", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		s := open(t, newURL(t), db.Options{InstanceID: "a", Clock: clk.Now})
		wantClaim(t, claim(t, s, "k", "fp1", "r1", 0), db.ClaimFresh, "")
		clk.Advance(1000 * time.Hour)
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
		ss := stores(t, newURL(t), "a", "b")
		claims := concurrently(t, 50, func(i int) (db.Claim, error) {
			return ss[i%2].IdempotencyClaim(t.Context(), "k", "fp", id("r", i), hour)
		})
		winner := oneFresh(t, claims)
		for i, c := range claims {
			if i != winner {
				wantClaim(t, c, db.ClaimReplay, id("r", winner))
			}
		}
	})

	t.Run("ConcurrentMixedFingerprints", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		fps := func(i int) string {
			if i%2 == 0 {
				return "even"
			}
			return "odd"
		}
		claims := concurrently(t, 50, func(i int) (db.Claim, error) {
			return s.IdempotencyClaim(t.Context(), "k", fps(i), id("r", i), hour)
		})
		winner := oneFresh(t, claims)
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
		clk := newClock()
		url := newURL(t)
		ss := []db.Store{open(t, url, db.Options{InstanceID: "a", Clock: clk.Now}), open(t, url, db.Options{InstanceID: "b", Clock: clk.Now})}
		wantClaim(t, claim(t, ss[0], "k", "old", "r-old", hour), db.ClaimFresh, "")
		// The old claim becomes two hours old, past every window below; the
		// winner's new claim is younger than any of them, so every other
		// caller replays it, whichever window it judges by: a caller that saw
		// the old claim never takes over the winner's.
		clk.Advance(2 * hour)
		windows := []time.Duration{hour, 90 * time.Minute, 100 * time.Minute}
		claims := concurrently(t, 30, func(i int) (db.Claim, error) {
			return ss[i%2].IdempotencyClaim(t.Context(), "k", "new", id("r", i), windows[i%3])
		})
		winner := oneFresh(t, claims)
		for i, c := range claims {
			if i != winner {
				wantClaim(t, c, db.ClaimReplay, id("r", winner))
			}
		}
	})
}

// oneFresh fails t unless exactly one of claims is fresh, and returns its
// index.
func oneFresh(t testing.TB, claims []db.Claim) int {
	t.Helper()
	winner := -1
	for i, c := range claims {
		if c.Outcome != db.ClaimFresh {
			continue
		}
		if winner >= 0 {
			t.Fatalf("claims %d and %d are both fresh", winner, i)
		}
		winner = i
	}
	if winner < 0 {
		t.Fatal("no claim is fresh")
	}
	return winner
}
