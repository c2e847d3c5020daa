package main

import (
	"github.com/spf13/cobra"

	"github.com/faucet-dev/faucet/server/triggers"
)

func newSchemaCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of a faucet file format",
		// Runnable, so that an unknown format is an error, not the help.
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "triggers",
		Short: "Print the JSON Schema of the faucet serve --triggers file",
		Long: "Print the JSON Schema (draft 2020-12) of the triggers file faucet serve reads with --triggers, " +
			"for an editor's completion and checks. faucet serve checks a triggers file against it, and more.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(triggers.Schema())
			return err
		},
	})
	return cmd
}
