#!/usr/bin/env bash
# Benchmarks of faucet serve against a real server process: submit latency
# (p50/p99 at concurrency 1 and 16), end-to-end throughput of trivial runs
# (generate 10 rows -> jsonl) and idle RSS, on SQLite and on a throwaway
# PostgreSQL server. Prints the go test benchmark lines; the figures are the
# p50-ms, p99-ms, runs/s and MiB columns.
set -euo pipefail
cd "$(dirname "$0")/.."

run() {
	go test -run '^$' -bench 'BenchmarkSubmit|BenchmarkTrivialRuns' -benchtime "${BENCHTIME:-500x}" -count=1 -timeout 30m ./server/e2e/
	go test -run '^$' -bench 'BenchmarkIdleRSS' -benchtime 1x -count=1 ./server/e2e/
}
if [ -n "${TEST_DATABASE_URL:-}" ]; then
	run
else
	export -f run
	go run ./internal/testpg/withpg bash -c run
fi
