package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/faucet-dev/faucet/plugins/builtin"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// newConnectorCmd is the hidden command through which faucet runs its
// built-in connectors as plugin processes of itself.
func newConnectorCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:    "connector",
		Short:  "Internal: serve a built-in connector as a plugin process",
		Hidden: true,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "serve NAME",
		Short: "Serve the built-in connector NAME over the plugin protocol (started by faucet itself)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, ok := builtin.Lookup(args[0])
			if !ok {
				var names []string
				for _, c := range builtin.All() {
					names = append(names, c.Spec().Name)
				}
				return fmt.Errorf("no built-in connector %q (built-ins: %s)", args[0], strings.Join(names, ", "))
			}
			sdk.Serve(c)
			return nil
		},
	})
	return cmd
}
