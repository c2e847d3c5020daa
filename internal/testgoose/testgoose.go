// Package testgoose builds the stock goose CLI for tests that prove faucet's
// migrations work with it, not only with the provider faucet embeds.
package testgoose

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// tags leave out every driver but Postgres and SQLite, which faucet's
// dialects are: the rest would only slow the build.
const tags = "no_clickhouse no_libsql no_mssql no_azuresql no_mysql no_vertica no_ydb"

// Build builds the goose command at the version go.mod pins into a
// temporary directory of t and returns its path.
func Build(t testing.TB) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the goose CLI: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "goose")
	out, err := exec.CommandContext(t.Context(), goBin, "build", "-tags", tags, "-o", bin, "github.com/pressly/goose/v3/cmd/goose").CombinedOutput()
	if err != nil {
		t.Fatalf("build goose: %v\n%s", err, out)
	}
	return bin
}
