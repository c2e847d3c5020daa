package postgres_test

import (
	"testing"

	"github.com/faucet-dev/faucet/db/dbtest"
	_ "github.com/faucet-dev/faucet/db/postgres"
	"github.com/faucet-dev/faucet/internal/testpg"
)

// BenchmarkStore measures the hot store operations on PostgreSQL.
func BenchmarkStore(b *testing.B) {
	dbtest.Benchmark(b, testpg.Database)
}
