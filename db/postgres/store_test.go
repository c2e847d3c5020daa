package postgres_test

import (
	"testing"

	"github.com/faucet-dev/faucet/db/dbtest"
	_ "github.com/faucet-dev/faucet/db/postgres"
	"github.com/faucet-dev/faucet/internal/testpg"
)

// TestConformance runs the shared run-history suite against PostgreSQL.
func TestConformance(t *testing.T) {
	dbtest.Exercise(t, testpg.Database)
}

// BenchmarkStore measures the hot store operations on PostgreSQL.
func BenchmarkStore(b *testing.B) {
	dbtest.Benchmark(b, testpg.Database)
}
