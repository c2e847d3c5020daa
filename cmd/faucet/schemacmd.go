package main

import (
	"github.com/spf13/cobra"

	"github.com/faucet-dev/faucet/server/triggers"
)

func newSchemaCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of a faucet file format",
		Args:  cobra.NoArgs,
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
