package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/faucet-dev/faucet/db/dbtest"
	_ "github.com/faucet-dev/faucet/db/sqlite"
)

// newURL is a fresh SQLite file in the test's temporary directory.
func newURL(t testing.TB) string { return "sqlite:" + filepath.Join(t.TempDir(), "history.db") }

func BenchmarkStore(b *testing.B) { dbtest.Benchmark(b, newURL) }
