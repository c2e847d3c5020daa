// Command faucet moves data from a source connector to a sink connector, from
// the terminal (faucet run) or as a long-running control plane (faucet serve).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// The exit statuses, as the help of the root command documents them.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitInterrupted = 130 // 128 + SIGINT, as a shell reports a Ctrl-C
	exitTerminated  = 143 // 128 + SIGTERM
)

// Why a command's context ended early.
var (
	errInterrupted = errors.New("interrupted")
	errTerminated  = errors.New("terminated")
)

func main() { os.Exit(run()) }

// startProfile starts a CPU profile and returns its stop; only a binary
// built with the faucet_cpuprofile tag profiles (cpuprofile.go).
var startProfile = func() func() { return func() {} }

func run() int {
	defer startProfile()()
	ctx, stop := withSignals(context.Background())
	defer stop()
	err := newRootCmd().ExecuteContext(ctx)
	code := exitCode(ctx, err)
	if err != nil {
		fmt.Fprintln(os.Stderr, "faucet:", err)
		if code == exitUsage {
			fmt.Fprintln(os.Stderr, "Run 'faucet --help' or 'faucet COMMAND --help' for usage.")
		}
	}
	return code
}

// withSignals returns a context that ends at the first SIGINT or SIGTERM,
// with errInterrupted or errTerminated as its cause.
func withSignals(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			if sig == syscall.SIGTERM {
				cancel(errTerminated)
			} else {
				cancel(errInterrupted)
			}
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// exitCode maps a command's outcome to faucet's exit status: 0 success, 2 a
// usage error (a flag, an argument or a value faucet cannot accept, found
// before any work began), 130 or 143 a command cut short by SIGINT or
// SIGTERM, 1 any other failure.
func exitCode(ctx context.Context, err error) int {
	var usage *usageError
	var failed *commandError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &usage):
		return exitUsage
	case !errors.As(err, &failed):
		// cobra's own errors (an unknown command or flag, a wrong number of
		// arguments, a missing required flag) come before any RunE.
		return exitUsage
	case errors.Is(context.Cause(ctx), errInterrupted):
		return exitInterrupted
	case errors.Is(context.Cause(ctx), errTerminated):
		return exitTerminated
	}
	return exitFailure
}

// usageError is a mistake in how faucet was invoked.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usageErrorf formats a usage error.
func usageErrorf(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// commandError marks an error a command's RunE returned: the invocation was
// understood and the work itself failed.
type commandError struct{ err error }

func (e *commandError) Error() string { return e.err.Error() }
func (e *commandError) Unwrap() error { return e.err }
