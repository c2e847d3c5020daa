// Command withpg runs a command with TEST_DATABASE_URL pointing at a throwaway
// PostgreSQL server, and removes the server when the command exits. When
// TEST_DATABASE_URL is already set, it runs the command against that server.
//
//	go run ./internal/testpg/withpg go test ./...
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/faucet-dev/faucet/internal/testpg"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: withpg COMMAND [ARG...]")
		return 2
	}
	if os.Getenv(testpg.EnvURL) == "" {
		srv, err := testpg.Start(context.Background())
		if err != nil {
			fmt.Fprintln(os.Stderr, "withpg:", err)
			return 1
		}
		defer srv.Close()
		os.Setenv(testpg.EnvURL, srv.URL())
		fmt.Fprintf(os.Stderr, "withpg: throwaway PostgreSQL on 127.0.0.1:%d\n", srv.Port())
	}

	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "withpg:", err)
		return 1
	}
	// Forward interrupts so the child winds down and the deferred Close still
	// removes the server.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	default:
		fmt.Fprintln(os.Stderr, "withpg:", err)
		return 1
	}
}
