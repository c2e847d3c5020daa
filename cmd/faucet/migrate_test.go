package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/testpg"
	migrations "github.com/faucet-dev/faucet/sql"
)

// faucet runs the CLI with args and returns its output.
func faucet(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return faucetWithInput(t, "", args...)
}

// faucetWithInput is faucet with stdin as the command's standard input.
func faucetWithInput(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetIn(strings.NewReader(stdin))
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
			if name == "sqlite" {
				// Looking at a file that is not there does not create it.
				for _, sub := range []string{"version", "status", "down"} {
					if out, err := faucet(t, "migrate", sub, h); err == nil || !strings.Contains(err.Error(), "no run history at ") {
						t.Fatalf("migrate %s of a missing file: %v\n%s", sub, err, out)
					}
				}
				if _, err := os.Stat(strings.TrimPrefix(h, "--history=sqlite:")); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("inspecting a missing history created it: %v", err)
				}
			} else {
				wantOutput(t, mustFaucet(t, "migrate", "version", h), "schema version 0", "pending")
				wantOutput(t, mustFaucet(t, "migrate", "status", h), "pending", "00001_run_history.sql")
			}
			wantOutput(t, mustFaucet(t, "migrate", "up", h), "OK", "up 00001_run_history.sql", "(up to date)")
			wantOutput(t, mustFaucet(t, "migrate", "up", h), "(up to date)")
			wantOutput(t, mustFaucet(t, "migrate", "status", h), "applied")
			var st migrationStatus
			if err := json.Unmarshal([]byte(mustFaucet(t, "migrate", "status", h, "--output", "json")), &st); err != nil ||
				st.SchemaVersion != int64(newest.version) || len(st.Migrations) != newest.count || st.Migrations[0].State != "applied" || st.Migrations[0].AppliedAt == nil {
				t.Fatalf("migrate status --output json: %+v (%v)", st, err)
			}
			// Removing every table asks first.
			out, err := faucetWithInput(t, "no\n", "migrate", "down", "--to", "0", h)
			if err == nil || !strings.Contains(out, "Type yes to go ahead") {
				t.Fatalf("down --to 0 answered no: %v\n%s", err, out)
			}
			wantOutput(t, mustFaucet(t, "migrate", "version", h), fmt.Sprintf("schema version %d", newest.version))
			out, err = faucetWithInput(t, "yes\n", "migrate", "down", "--to", "0", h)
			if err != nil {
				t.Fatalf("down --to 0 answered yes: %v\n%s", err, out)
			}
			wantOutput(t, out, "down 00001_run_history.sql", "schema version 0")
			wantOutput(t, mustFaucet(t, "migrate", "up", h), "up 00001_run_history.sql")
			wantOutput(t, mustFaucet(t, "migrate", "down", "--to", "0", "--yes", h), "down 00001_run_history.sql", "schema version 0")
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

// TestMigrateDefaultsToServesHistory: without --history, migrate works on
// the history faucet serve uses without it, the SQLite file in the data
// directory, and the variables serve reads name it as they do for serve.
func TestMigrateDefaultsToServesHistory(t *testing.T) {
	dir := t.TempDir()
	wantOutput(t, mustFaucet(t, "migrate", "up", "--data-dir", dir), "up 00001_run_history.sql")
	if _, err := os.Stat(filepath.Join(dir, "history.db")); err != nil {
		t.Fatalf("migrate up --data-dir did not create serve's history file: %v", err)
	}
	t.Setenv("FAUCET_DATA_DIR", dir)
	wantOutput(t, mustFaucet(t, "migrate", "version"), fmt.Sprintf("schema version %d (up to date)", newest.version))
	other := filepath.Join(t.TempDir(), "other.db")
	t.Setenv("FAUCET_HISTORY", "sqlite:"+other)
	if _, err := faucet(t, "migrate", "status"); err == nil || !strings.Contains(err.Error(), "no run history at "+other) {
		t.Fatalf("FAUCET_HISTORY is not the history: %v", err)
	}
	t.Setenv("FAUCET_HISTORY", "")
	wantOutput(t, mustFaucet(t, "migrate", "version"), fmt.Sprintf("schema version %d (up to date)", newest.version))
}

func TestMigrateBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"migrate", "up", "--history", "memory"},
		{"migrate", "status", "--history", "memory"},
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

// newest is the newest migration faucet embeds and how many there are, so
// the assertions follow the schema as migrations are added.
var newest = func() (n struct{ version, count int }) {
	names, err := fs.Glob(migrations.SQLite, "*.sql")
	if err != nil {
		panic(err)
	}
	for _, name := range names {
		v, err := strconv.Atoi(name[:strings.IndexByte(name, '_')])
		if err != nil {
			panic("migration " + name + ": " + err.Error())
		}
		n.version, n.count = max(n.version, v), n.count+1
	}
	return n
}()
