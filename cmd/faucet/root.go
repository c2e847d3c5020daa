package main

import (
	"github.com/spf13/cobra"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "faucet",
		Short: "Move data from sources to sinks, from the terminal or as an HTTP control plane",
		Long: `faucet moves data: a pipeline reads records from a source connector and
writes them to a sink connector. faucet run runs one from the terminal; faucet
serve is an HTTP control plane that queues, executes and records runs.

Exit status: 0 success; 1 failure (a run that failed, a server that answered
with an error); 2 usage error (an unknown command or flag, a bad argument or
value, detected before any work began); 130 interrupted by Ctrl-C (SIGINT),
143 stopped by SIGTERM, before the command completed.`,
		Version:       versionLine(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	// Declared here so that cobra does not give it -v, which the commands
	// that run pipelines use for --verbose.
	root.Flags().Bool("version", false, "print faucet's version and the revision it was built from")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.AddCommand(
		newVersionCmd(),
		newConnectorCmd(),
		newRunCmd(),
		newValidateCmd(),
		newConnectorsCmd(),
		newMigrateCmd(),
		newOpenAPICmd(),
		newSchemaCmd(),
		newRunsCmd(),
		newCatalogCmd(),
		newPlanCmd(),
		newTemplateCmd(),
		newServeCmd(),
		newInitCmd(),
		newAuditCmd(),
		newWhoamiCmd(),
		newMCPCmd(),
	)
	markCommandErrors(root)
	return root
}

// markCommandErrors wraps the RunE of c and of every command below it, so
// that exitCode tells their errors from cobra's usage errors.
func markCommandErrors(c *cobra.Command) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if err := run(cmd, args); err != nil {
				return &commandError{err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		markCommandErrors(sub)
	}
}
