package dbtest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/testwait"
)

// leaderTTL is the leader lease the leader tests grant; the clock decides
// when it lapses.
const leaderTTL = 10 * time.Second

func elect(t testing.TB, s db.Store) bool {
	t.Helper()
	ok, err := s.LeaderElect(t.Context(), leaderTTL)
	if err != nil {
		t.Fatalf("elect %s: %v", s.InstanceID(), err)
	}
	return ok
}

func exerciseLeader(t *testing.T, newURL func(t testing.TB) string) {
	t.Run("OneOfManyIsElected", func(t *testing.T) {
		t.Parallel()
		url, clk := newURL(t), newClock()
		const n = 8
		members := make([]db.Store, n)
		for i := range members {
			members[i] = member(t, url, clk, fmt.Sprintf("m%d", i), liveLease)
		}
		won := concurrently(t, n, func(i int) (bool, error) { return members[i].LeaderElect(t.Context(), leaderTTL) })
		leader := onlyWinner(t, won)
		// The leader keeps the lease by renewing it; the others stay out.
		for i, m := range members {
			if got := elect(t, m); got != (i == leader) {
				t.Fatalf("member %d elected %v on the second round, leader is %d", i, got, leader)
			}
		}
	})

	t.Run("ALapsedLeaseIsTakenOver", func(t *testing.T) {
		t.Parallel()
		url, clk := newURL(t), newClock()
		a, b := member(t, url, clk, "a", liveLease), member(t, url, clk, "b", liveLease)
		if !elect(t, a) || elect(t, b) {
			t.Fatal("a first, then b: a must lead")
		}
		// Renewed just before it lapses, the lease holds.
		clk.Advance(leaderTTL - time.Millisecond)
		if !elect(t, a) {
			t.Fatal("the leader lost a lease it renewed in time")
		}
		clk.Advance(leaderTTL - time.Millisecond)
		if elect(t, b) {
			t.Fatal("b took a renewed lease")
		}
		// a dies: its lease lapses and b takes over, once.
		clk.Advance(2 * time.Millisecond)
		if !elect(t, b) {
			t.Fatal("b did not take over the lapsed lease")
		}
		if elect(t, a) {
			t.Fatal("the old leader took the lease back from its successor")
		}
	})

	t.Run("ResignHandsTheLeaseOn", func(t *testing.T) {
		t.Parallel()
		url, clk := newURL(t), newClock()
		a, b := member(t, url, clk, "a", liveLease), member(t, url, clk, "b", liveLease)
		if !elect(t, a) {
			t.Fatal("a was not elected")
		}
		// A member that does not lead resigns nothing.
		if err := b.LeaderResign(t.Context()); err != nil {
			t.Fatal(err)
		}
		if elect(t, b) {
			t.Fatal("b's resignation freed a's lease")
		}
		if err := a.LeaderResign(t.Context()); err != nil {
			t.Fatal(err)
		}
		if !elect(t, b) {
			t.Fatal("b was not elected at once after a resigned")
		}
	})

	t.Run("WakeReachesEveryListener", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		sender, listener := open(t, url, db.Options{InstanceID: "sender"}), open(t, url, db.Options{InstanceID: "listener"})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		got := make(chan db.WakeTopic, 64)
		done := make(chan error, 1)
		go func() { done <- listener.Listen(ctx, func(topic db.WakeTopic) { got <- topic }) }()
		heard := false
		// The listener may not be listening yet: wake until it hears one,
		// unless its dialect says at once that it has no wake-ups.
		testwait.Until(t, 30*time.Second, func() error {
			select {
			case err := <-done:
				if !errors.Is(err, db.ErrNoWakeups) {
					t.Fatalf("listen: %v", err)
				}
				return nil
			default:
			}
			if err := sender.Wake(t.Context(), db.WakeCancel); err != nil {
				t.Fatal(err)
			}
			// Listening, it first hears that it may have missed work.
			for {
				select {
				case topic := <-got:
					switch topic {
					case db.WakeCancel:
						heard = true
						return nil
					case db.WakeWork:
						continue
					}
					t.Fatalf("heard %q, want %q", topic, db.WakeCancel)
				case <-time.After(20 * time.Millisecond):
					return errors.New("the listener heard no wake-up")
				}
			}
		})
		if !heard {
			// Without notifications waking is a harmless no-op.
			if err := sender.Wake(t.Context(), db.WakeWork); err != nil {
				t.Fatalf("wake without notifications: %v", err)
			}
			return
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("listen ended with %v, want its context's end", err)
		}
	})
}
