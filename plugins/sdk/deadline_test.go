package sdk

import (
	"context"
	"errors"
	"testing"
	"time"
)

type valueKey struct{}

// TestLazyDeadlineEndsAtItsDeadline: a describer that waits on the context
// is woken at the deadline with DeadlineExceeded, and sees the values of
// the session's context, but not its cancellation.
func TestLazyDeadlineEndsAtItsDeadline(t *testing.T) {
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), valueKey{}, "v"))
	cancel()
	ctx, release := withLazyDeadline(parent, 50*time.Millisecond)
	defer release()
	if ctx.Value(valueKey{}) != "v" {
		t.Error("the context lost its parent's value")
	}
	if err := ctx.Err(); err != nil {
		t.Fatalf("Err before the deadline = %v; the parent's cancellation leaked in", err)
	}
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > 50*time.Millisecond {
		t.Errorf("Deadline = %v, %v", d, ok)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done was not closed at the deadline")
	}
	if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err after the deadline = %v", err)
	}
	// A context derived from it ends with it.
	child, stop := context.WithCancel(ctx)
	defer stop()
	if !errors.Is(child.Err(), context.DeadlineExceeded) {
		t.Errorf("derived context: %v", child.Err())
	}
}

// TestLazyDeadlineArmsNoTimerUntilWaitedOn: a describer that never looks at
// the context costs no timer, and still reads the deadline as passed once
// it has, Done then handed out closed.
func TestLazyDeadlineArmsNoTimerUntilWaitedOn(t *testing.T) {
	ctx, release := withLazyDeadline(context.Background(), time.Millisecond)
	defer release()
	time.Sleep(5 * time.Millisecond)
	if ctx.timer != nil {
		t.Fatal("a timer was armed with no one waiting")
	}
	if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err past the deadline = %v", err)
	}
	select {
	case <-ctx.Done():
	default:
		t.Fatal("Done past the deadline is open")
	}
	if ctx.timer != nil {
		t.Error("a timer was armed for a deadline already past")
	}
}

// TestLazyDeadlineReleaseWakesWaiters: releasing the context ends it at
// once, cancelled, for those already waiting and those who ask later, and
// stops its timer.
func TestLazyDeadlineReleaseWakesWaiters(t *testing.T) {
	ctx, release := withLazyDeadline(context.Background(), time.Hour)
	woke := make(chan error)
	go func() {
		<-ctx.Done()
		woke <- ctx.Err()
	}()
	for {
		ctx.mu.Lock()
		armed := ctx.timer != nil
		ctx.mu.Unlock()
		if armed {
			break
		}
		time.Sleep(time.Millisecond)
	}
	release()
	select {
	case err := <-woke:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Err after the release = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the release did not wake the waiter")
	}
	if ctx.timer.Stop() {
		t.Error("the timer was still armed after the release")
	}
	select {
	case <-ctx.Done():
	default:
		t.Error("Done after the release is open")
	}
	release()
}
