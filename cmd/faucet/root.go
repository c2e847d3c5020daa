package main

import (
	"github.com/spf13/cobra"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "faucet",
		Short:         "Move data from sources to sinks, from the terminal or as an HTTP control plane",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newVersionCmd(),
		newConnectorCmd(),
		newRunCmd(),
		newValidateCmd(),
		newConnectorsCmd(),
		newMigrateCmd(),
		newOpenAPICmd(),
		newRunsCmd(),
		newServeCmd(),
	)
	return root
}
