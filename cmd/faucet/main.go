// Command faucet moves data from a source connector to a sink connector, from
// the terminal (faucet run) or as a long-running control plane (faucet serve).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCmd().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "faucet:", err)
		stop()
		os.Exit(1)
	}
}
