package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/faucet-dev/faucet/pipeline"
)

// setUsage is the help of --set, which run, validate and runs submit share.
const setUsage = "override a config value, key.path=value (value read as JSON when it parses as JSON; repeatable)"

func newValidateCmd() *cobra.Command {
	var (
		pf   pluginFlags
		sets []string
		out  *outputFormat
	)
	cmd := &cobra.Command{
		Use:   "validate FILE",
		Short: "Check a pipeline config (YAML or JSON; - reads standard input) without running it",
		Long: `Validate parses a pipeline config, checks faucet's own fields, expands the
matrix, interpolates ${env:NAME} and ${vars.NAME}, and validates every
connector config against the connector's JSON Schema. Every problem is
reported at once, with its path in the config and, where known, its line and
column; a value a --set override put in place is blamed on the override.
Nothing is read or written. The exit status is 1 when the config is invalid.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, _, err := pf.open(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer h.Close()
			plan, notes, err := loadPlan(args[0], sets, h)
			if *out == outputJSON {
				return printValidation(cmd.OutOrStdout(), args[0], plan, notes, err)
			}
			for _, n := range notes {
				fmt.Fprintln(cmd.ErrOrStderr(), n)
			}
			if err != nil {
				return configProblems(cmd.ErrOrStderr(), args[0], err)
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
	out = addOutputFlags(cmd)
	cmd.Flags().StringArrayVar(&sets, "set", nil, setUsage)
	return cmd
}

// validation is what validate prints with --output json.
type validation struct {
	File        string              `json:"file"`
	Valid       bool                `json:"valid"`
	Invocations []validInvocation   `json:"invocations,omitempty"`
	Problems    []validationProblem `json:"problems,omitempty"`
	Notes       []string            `json:"notes,omitempty"`
}

type validInvocation struct {
	RowID         string `json:"row_id"`
	Source        string `json:"source"`
	Sink          string `json:"sink"`
	SinkWriteMode string `json:"sink_write_mode,omitempty"`
}

// validationProblem is one pipeline.ConfigError, field by field.
type validationProblem struct {
	File    string   `json:"file,omitempty"`
	Path    string   `json:"path,omitempty"`
	Line    int      `json:"line,omitempty"`
	Column  int      `json:"column,omitempty"`
	Rows    []string `json:"rows,omitempty"`
	Set     string   `json:"set,omitempty"`
	Message string   `json:"message"`
}

// printValidation prints the outcome of a validation as JSON. An invalid
// config is still an error, for the exit status, once it is printed.
func printValidation(w io.Writer, file string, plan *pipeline.Plan, notes []string, loadErr error) error {
	v := validation{File: displayName(file), Valid: loadErr == nil, Notes: notes}
	probs := pipeline.ConfigProblems(loadErr)
	if loadErr != nil && len(probs) == 0 {
		return loadErr
	}
	for _, p := range probs {
		v.Problems = append(v.Problems, validationProblem{File: p.File, Path: p.Path, Line: p.Line, Column: p.Column, Rows: p.Rows, Set: p.Set, Message: p.Message})
	}
	if plan != nil {
		for _, inv := range plan.Invocations {
			v.Invocations = append(v.Invocations, validInvocation{RowID: inv.RowID, Source: inv.Source.Type, Sink: inv.Sink.Type, SinkWriteMode: inv.SinkWriteMode})
		}
	}
	if err := printJSON(w, v); err != nil {
		return err
	}
	if loadErr != nil {
		return invalidConfig(file, len(probs))
	}
	return nil
}

// loadPlan loads the config in file ("-" for standard input) against the
// catalog. notes are remarks on a valid config worth a person's attention.
func loadPlan(file string, sets []string, catalog pipeline.Catalog) (plan *pipeline.Plan, notes []string, err error) {
	opts := pipeline.LoadOptions{Sets: sets, Catalog: catalog}
	if file == "-" {
		data, rerr := io.ReadAll(os.Stdin)
		if rerr != nil {
			return nil, nil, fmt.Errorf("read pipeline config from standard input: %w", rerr)
		}
		plan, err = pipeline.Load(data, opts)
	} else {
		plan, err = pipeline.LoadFile(file, opts)
	}
	if err != nil {
		return nil, nil, err
	}
	if plan.Shard != nil {
		// Said, not silently dropped: the config may be meant for a server.
		notes = append(notes, fmt.Sprintf("note: shard: {count: %d} takes effect in faucet serve; faucet run splits a run only with --shards N, and otherwise runs it whole", plan.Shard.Count))
	}
	return plan, notes, nil
}

// configProblems prints each problem of a config that did not load on its
// own line and returns the error that sums them up; an error that is not
// about the config comes back as it is.
func configProblems(w io.Writer, file string, err error) error {
	probs := pipeline.ConfigProblems(err)
	if len(probs) == 0 {
		return err
	}
	for _, p := range probs {
		fmt.Fprintln(w, p)
	}
	return invalidConfig(file, len(probs))
}

func invalidConfig(file string, problems int) error {
	return fmt.Errorf("%s is not a valid pipeline config (%d problem(s))", displayName(file), problems)
}

func displayName(file string) string {
	if file == "-" {
		return "standard input"
	}
	return file
}
