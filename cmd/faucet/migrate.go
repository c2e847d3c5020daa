package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/spf13/cobra"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/server"
)

func newMigrateCmd() *cobra.Command {
	h := &historyFlags{}
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Inspect and change the schema of a run-history database",
		Long: `Inspect and change the schema of a run-history database.

faucet serve migrates its database up by itself on start; these commands are
for operators who migrate ahead of a rollout, check where a database stands,
or roll a schema back. The history URL is one of sqlite:PATH, sqlite://PATH,
postgres://… or postgresql://…; without --history it is the one faucet serve
uses without it, the SQLite file in --data-dir. Like serve's, the flags can
be set as FAUCET_HISTORY and FAUCET_DATA_DIR. Only up creates a database
that does not exist yet.`,
	}
	cmd.PersistentFlags().StringVar(&h.url, "history", "", "run-history database URL (default: faucet serve's, the SQLite file in --data-dir)")
	cmd.PersistentFlags().StringVar(&h.dataDir, "data-dir", server.DefaultDataDir(), "faucet serve's data directory, where its default history file is")

	var (
		downTo int64
		yes    bool
		status *outputFormat
	)
	up := &cobra.Command{
		Use:   "up",
		Short: "Apply every pending migration",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return h.withMigrator(cmd, true, func(p *goose.Provider) error {
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
that version. --to 0 removes faucet's tables and every run in them, so it
asks for confirmation first (type yes) unless --yes is given.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return h.withMigrator(cmd, false, func(p *goose.Provider) error {
				if err := db.CheckSchemaVersion(cmd.Context(), p); err != nil {
					return err
				}
				if cmd.Flags().Changed("to") && downTo == 0 && !yes {
					if err := confirm(cmd, fmt.Sprintf("This removes faucet's tables, and every run in them, from %s.", h.display())); err != nil {
						return err
					}
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
	down.Flags().BoolVar(&yes, "yes", false, "do not ask before --to 0 removes every table")
	statusCmd := &cobra.Command{
		Use:   "status",
		Short: "List every migration this faucet knows and whether it is applied",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return h.withMigrator(cmd, false, func(p *goose.Provider) error {
				st, err := p.Status(cmd.Context())
				if err != nil {
					return fmt.Errorf("migration status: %w", err)
				}
				if *status == outputJSON {
					return printStatusJSON(cmd, p, st)
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
	status = addOutputFlags(statusCmd)
	version := &cobra.Command{
		Use:   "version",
		Short: "Print the database's schema version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return h.withMigrator(cmd, false, func(p *goose.Provider) error {
				return printVersion(cmd.Context(), cmd.OutOrStdout(), p)
			})
		},
	}
	cmd.AddCommand(up, down, statusCmd, version)
	return cmd
}

// historyFlags say which run history the migrate commands work on.
type historyFlags struct {
	url     string
	dataDir string
}

// resolve returns the history URL the flags (or their variables) name.
func (h *historyFlags) resolve(cmd *cobra.Command) (string, error) {
	if err := flagsFromEnv(cmd.Flags(), "history", "data-dir"); err != nil {
		return "", err
	}
	if h.url == "" {
		return "sqlite:" + server.DefaultHistoryFile(h.dataDir), nil
	}
	return h.url, nil
}

// display names the history for messages, without a password.
func (h *historyFlags) display() string { return db.RedactURL(h.url) }

// withMigrator runs fn with the goose provider of the history. Only create
// (migrate up) may bring a SQLite file into being: inspecting or rolling back
// a path that does not exist says so instead of leaving an empty database
// behind.
func (h *historyFlags) withMigrator(cmd *cobra.Command, create bool, fn func(*goose.Provider) error) error {
	url, err := h.resolve(cmd)
	if err != nil {
		return err
	}
	h.url = url
	name, dsn, err := db.ParseURL(url)
	if err != nil {
		return usageErrorf("--history: %w", err)
	}
	if dsn == db.MemoryDSN {
		return usageErrorf("--history memory is a database private to one process, gone when it exits: there is nothing to migrate; name a sqlite: file or a postgres:// database")
	}
	if name == "sqlite" && !strings.HasPrefix(dsn, "file:") {
		_, err := os.Stat(dsn)
		switch {
		case create:
			// As faucet serve does for its history.
			if err := os.MkdirAll(filepath.Dir(dsn), 0o700); err != nil {
				return fmt.Errorf("create history directory: %w", err)
			}
		case errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("no run history at %s: faucet serve creates it on its first start, and faucet migrate up creates it with the schema", dsn)
		}
	}
	d, err := db.LookupDialect(name)
	if err != nil {
		return err
	}
	p, closer, err := d.Migrator(cmd.Context(), dsn)
	if err != nil {
		return fmt.Errorf("open %s history: %w", name, err)
	}
	defer closer.Close()
	return fn(p)
}

// confirm asks on the terminal (or reads standard input) for "yes" before
// something that cannot be undone.
func confirm(cmd *cobra.Command, what string) error {
	fmt.Fprintf(cmd.ErrOrStderr(), "%s Type yes to go ahead (or pass --yes): ", what)
	line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
	if strings.TrimSpace(line) == "yes" {
		return nil
	}
	fmt.Fprintln(cmd.ErrOrStderr())
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read confirmation: %w", err)
	}
	return errors.New("not confirmed; nothing was changed")
}

// migrationStatus is what migrate status prints with --output json.
type migrationStatus struct {
	SchemaVersion int64             `json:"schema_version"`
	NewestKnown   int64             `json:"newest_known"`
	Migrations    []migrationRecord `json:"migrations"`
}

type migrationRecord struct {
	Version   int64      `json:"version"`
	State     string     `json:"state"`
	AppliedAt *time.Time `json:"applied_at,omitempty"`
	Migration string     `json:"migration"`
}

func printStatusJSON(cmd *cobra.Command, p *goose.Provider, st []*goose.MigrationStatus) error {
	current, err := p.GetDBVersion(cmd.Context())
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	out := migrationStatus{SchemaVersion: current, NewestKnown: db.NewestVersion(p), Migrations: []migrationRecord{}}
	for _, s := range st {
		r := migrationRecord{Version: s.Source.Version, State: string(s.State), Migration: s.Source.Path}
		if s.State == goose.StateApplied {
			at := s.AppliedAt.UTC()
			r.AppliedAt = &at
		}
		out.Migrations = append(out.Migrations, r)
	}
	return printJSON(cmd.OutOrStdout(), out)
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
