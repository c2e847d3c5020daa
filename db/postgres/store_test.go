package postgres_test

import (
	"testing"

	"github.com/faucet-dev/faucet/db/dbtest"
)

// BenchmarkStore measures the hot store operations on PostgreSQL.
func BenchmarkStore(b *testing.B) {
	dbtest.Benchmark(b, migratedDatabase)
}
