package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/testpg"
)

// faucet runs the CLI with args and returns its output.
func faucet(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(t.Context())
	return out.String(), err
}

func mustFaucet(t *testing.T, args ...string) string {
	t.Helper()
	out, err := faucet(t, args...)
	if err != nil {
		t.Fatalf("faucet %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func wantOutput(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Fatalf("output lacks %q:\n%s", w, out)
		}
	}
}

func TestMigrateCommand(t *testing.T) {
	urls := map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "history.db") },
		"postgres": func(t *testing.T) string { return testpg.Database(t) },
	}
	for name, newURL := range urls {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := "--history=" + newURL(t)
			wantOutput(t, mustFaucet(t, "migrate", "version", h), "schema version 0", "pending")
			wantOutput(t, mustFaucet(t, "migrate", "status", h), "pending", "00001_run_history.sql")
			wantOutput(t, mustFaucet(t, "migrate", "up", h), "OK", "up 00001_run_history.sql", "(up to date)")
			wantOutput(t, mustFaucet(t, "migrate", "up", h), "(up to date)")
			wantOutput(t, mustFaucet(t, "migrate", "status", h), "applied")
			wantOutput(t, mustFaucet(t, "migrate", "down", "--to", "0", h), "down 00001_run_history.sql", "schema version 0")
			wantOutput(t, mustFaucet(t, "migrate", "down", h), "schema version 0")
			wantOutput(t, mustFaucet(t, "migrate", "up", h), "up 00001_run_history.sql")
			// The schema the command applied is the one the store expects.
			s, err := db.Open(t.Context(), strings.TrimPrefix(h, "--history="), db.Options{})
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
		})
	}
}

func TestMigrateRefusesNewerSchema(t *testing.T) {
	url := "sqlite:" + filepath.Join(t.TempDir(), "history.db")
	mustFaucet(t, "migrate", "up", "--history", url)
	name, dsn, err := db.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	d, err := db.LookupDialect(name)
	if err != nil {
		t.Fatal(err)
	}
	noop := &goose.GoFunc{RunTx: func(context.Context, *sql.Tx) error { return nil }}
	p, closer, err := d.Migrator(t.Context(), dsn, goose.WithGoMigrations(goose.NewGoMigration(9999, noop, noop)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Up(t.Context()); err != nil {
		t.Fatal(err)
	}
	closer.Close()

	for _, sub := range []string{"up", "down"} {
		out, err := faucet(t, "migrate", sub, "--history", url)
		if !errors.Is(err, db.ErrSchemaTooNew) {
			t.Fatalf("migrate %s on a newer schema: %v\n%s", sub, err, out)
		}
	}
	wantOutput(t, mustFaucet(t, "migrate", "version", "--history", url), "schema version 9999", "upgrade faucet")
}

func TestMigrateBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"migrate", "up"},
		{"migrate", "up", "--history", "mysql://host/db"},
		{"migrate", "up", "--history", "sqlite:"},
		{"migrate", "status", "--history", "postgres://%zz@host/db"},
	} {
		if out, err := faucet(t, args...); err == nil {
			t.Errorf("faucet %s succeeded:\n%s", strings.Join(args, " "), out)
		}
	}
	_, err := faucet(t, "migrate", "up", "--history", "mysql://host/db")
	if !errors.Is(err, db.ErrBadURL) {
		t.Fatalf("unknown scheme: %v, want ErrBadURL", err)
	}
}
