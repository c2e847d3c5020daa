package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/spf13/cobra"

	"github.com/faucet-dev/faucet/db"
)

func newMigrateCmd() *cobra.Command {
	var history string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Inspect and change the schema of a run-history database",
		Long: `Inspect and change the schema of a run-history database.

faucet serve migrates its database up by itself on start; these commands are
for operators who migrate ahead of a rollout, check where a database stands,
or roll a schema back. The history URL is one of sqlite:PATH, sqlite://PATH,
postgres://… or postgresql://….`,
	}
	cmd.PersistentFlags().StringVar(&history, "history", "", "run-history database URL (required)")
	_ = cmd.MarkPersistentFlagRequired("history")

	var downTo int64
	up := &cobra.Command{
		Use:   "up",
		Short: "Apply every pending migration",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withMigrator(cmd.Context(), history, func(p *goose.Provider) error {
				res, err := db.MigrateUp(cmd.Context(), p)
				printResults(cmd.OutOrStdout(), res)
				if err != nil {
					return err
				}
				return printVersion(cmd.Context(), cmd.OutOrStdout(), p)
			})
		},
	}
	down := &cobra.Command{
		Use:   "down",
		Short: "Roll back the newest migration, or every migration above --to",
		Long: `Roll back the newest applied migration, or with --to every migration above
that version (--to 0 removes faucet's tables and everything in them).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withMigrator(cmd.Context(), history, func(p *goose.Provider) error {
				if err := db.CheckSchemaVersion(cmd.Context(), p); err != nil {
					return err
				}
				var res []*goose.MigrationResult
				var err error
				if cmd.Flags().Changed("to") {
					res, err = p.DownTo(cmd.Context(), downTo)
				} else {
					var one *goose.MigrationResult
					if one, err = p.Down(cmd.Context()); one != nil {
						res = []*goose.MigrationResult{one}
					}
					if errors.Is(err, goose.ErrNoNextVersion) {
						err = nil
					}
				}
				printResults(cmd.OutOrStdout(), res)
				if err != nil {
					return fmt.Errorf("migrate down: %w", err)
				}
				return printVersion(cmd.Context(), cmd.OutOrStdout(), p)
			})
		},
	}
	down.Flags().Int64Var(&downTo, "to", 0, "roll back to this schema version")
	status := &cobra.Command{
		Use:   "status",
		Short: "List every migration this faucet knows and whether it is applied",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withMigrator(cmd.Context(), history, func(p *goose.Provider) error {
				st, err := p.Status(cmd.Context())
				if err != nil {
					return fmt.Errorf("migration status: %w", err)
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "VERSION\tSTATE\tAPPLIED AT\tMIGRATION")
				for _, s := range st {
					applied := "-"
					if s.State == goose.StateApplied {
						applied = s.AppliedAt.UTC().Format(time.RFC3339)
					}
					fmt.Fprintf(w, "%d\t%s\t%s\t%s\n", s.Source.Version, s.State, applied, s.Source.Path)
				}
				if err := w.Flush(); err != nil {
					return err
				}
				return printVersion(cmd.Context(), cmd.OutOrStdout(), p)
			})
		},
	}
	version := &cobra.Command{
		Use:   "version",
		Short: "Print the database's schema version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withMigrator(cmd.Context(), history, func(p *goose.Provider) error {
				return printVersion(cmd.Context(), cmd.OutOrStdout(), p)
			})
		},
	}
	cmd.AddCommand(up, down, status, version)
	return cmd
}

// withMigrator runs fn with the goose provider of the database at history.
func withMigrator(ctx context.Context, history string, fn func(*goose.Provider) error) error {
	name, dsn, err := db.ParseURL(history)
	if err != nil {
		return err
	}
	d, err := db.LookupDialect(name)
	if err != nil {
		return err
	}
	p, closer, err := d.Migrator(ctx, dsn)
	if err != nil {
		return fmt.Errorf("open %s history: %w", name, err)
	}
	defer closer.Close()
	return fn(p)
}

func printResults(w io.Writer, res []*goose.MigrationResult) {
	for _, r := range res {
		fmt.Fprintln(w, r)
	}
}

// printVersion reports where the database stands against this binary.
func printVersion(ctx context.Context, w io.Writer, p *goose.Provider) error {
	current, err := p.GetDBVersion(ctx)
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	known := db.NewestVersion(p)
	switch {
	case current > known:
		_, err = fmt.Fprintf(w, "schema version %d (newer than this faucet, which knows up to %d: upgrade faucet)\n", current, known)
	case current < known:
		_, err = fmt.Fprintf(w, "schema version %d (%d pending; run faucet migrate up)\n", current, known-current)
	default:
		_, err = fmt.Fprintf(w, "schema version %d (up to date)\n", current)
	}
	return err
}
