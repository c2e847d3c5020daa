#!/usr/bin/env bash
# Runs faucet's benchmarks against real SQLite files and a throwaway PostgreSQL
# server and prints their figures. Benchmarks measure; tests never time things.
#
#   BENCH=RunClaimPending COUNT=3 scripts/bench.sh   # a subset, repeated
set -euo pipefail
cd "$(dirname "$0")/.."

mkdir -p bench-results
out="bench-results/$(date -u +%Y%m%dT%H%M%SZ).txt"
go run ./internal/testpg/withpg \
	go test -run '^$' -bench "${BENCH:-.}" -benchmem -count="${COUNT:-1}" -timeout 60m ./... | tee "$out"

# One line per benchmark and package: the package's last path element (the
# dialect for the store benchmarks), the operation, and its ops/s.
echo
echo "ops/s (full output in $out):"
awk '
	/^pkg:/ { n = split($2, parts, "/"); pkg = parts[n] }
	/^Benchmark/ {
		for (i = 2; i <= NF; i++) if ($i == "ops/s") {
			name = $1
			sub(/^Benchmark[^\/]*\//, "", name)
			sub(/-[0-9]+$/, "", name)
			printf "  %-10s %-36s %12.0f\n", pkg, name, $(i - 1)
		}
	}
' "$out"

# Pipeline throughput on the 1M-row dataset, databases included.
go run ./internal/testpg/withpg bash scripts/bench-pipeline.sh
