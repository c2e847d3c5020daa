package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/faucet-dev/faucet/pipeline"
)

func newValidateCmd() *cobra.Command {
	var pf pluginFlags
	var sets []string
	cmd := &cobra.Command{
		Use:   "validate FILE",
		Short: "Check a pipeline config (YAML or JSON; - reads standard input) without running it",
		Long: `Validate parses a pipeline config, checks faucet's own fields, expands the
matrix, interpolates ${env:NAME} and ${vars.NAME}, and validates every
connector config against the connector's JSON Schema. Every problem is
reported with its path in the config and, where known, its line and column.
Nothing is read or written.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, _, err := pf.open(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer h.Close()
			plan, err := loadPlan(args[0], sets, h, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s: valid, %d invocation(s)\n", displayName(args[0]), len(plan.Invocations))
			for _, inv := range plan.Invocations {
				fmt.Fprintf(out, "  %s: %s → %s\n", inv.RowID, inv.Source.Type, inv.Sink.Type)
			}
			return nil
		},
	}
	pf.register(cmd)
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override a config value, key.path=value (value read as JSON when it parses as JSON; repeatable)")
	return cmd
}

// loadPlan loads the config in file ("-" for standard input) against the
// catalog, printing each problem on its own line to problems.
func loadPlan(file string, sets []string, catalog pipeline.Catalog, problems io.Writer) (*pipeline.Plan, error) {
	opts := pipeline.LoadOptions{Sets: sets, Catalog: catalog}
	var plan *pipeline.Plan
	var err error
	if file == "-" {
		data, rerr := io.ReadAll(os.Stdin)
		if rerr != nil {
			return nil, fmt.Errorf("read pipeline config from standard input: %w", rerr)
		}
		plan, err = pipeline.Load(data, opts)
	} else {
		plan, err = pipeline.LoadFile(file, opts)
	}
	if probs := pipeline.ConfigProblems(err); len(probs) > 0 {
		for _, p := range probs {
			fmt.Fprintln(problems, p)
		}
		return nil, fmt.Errorf("%s is not a valid pipeline config (%d problem(s))", displayName(file), len(probs))
	}
	if err == nil && plan.Shard != nil {
		// Said, not silently dropped: the config may be meant for a cluster.
		fmt.Fprintf(problems, "note: shard: {count: %d} takes effect in faucet serve --cluster only; here the pipeline runs whole\n", plan.Shard.Count)
	}
	return plan, err
}

func displayName(file string) string {
	if file == "-" {
		return "standard input"
	}
	return file
}
