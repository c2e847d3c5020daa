#!/usr/bin/env bash
# Runs faucet's benchmarks against real SQLite files and a throwaway PostgreSQL
# server and prints their figures. Benchmarks measure; tests never time things.
#
#   BENCH=RunClaimPending COUNT=3 scripts/bench.sh   # a subset, repeated
set -euo pipefail
cd "$(dirname "$0")/.."

# The console's first-paint benchmark drives Debian's Chromium.
bash scripts/console-tools.sh --browser

mkdir -p bench-results
out="bench-results/$(date -u +%Y%m%dT%H%M%SZ).txt"
go run ./internal/testpg/withpg \
	go test -run '^$' -bench "${BENCH:-.}" -benchmem -count="${COUNT:-1}" -timeout 60m ./... | tee "$out"

# One line per benchmark and package: the package's last path element (the
# dialect for the store benchmarks), the benchmark, and every figure it
# reports besides Go's own ns/op, B/op and allocs/op (ops/s, rows/s, runs/s,
# latency percentiles, MiB, seconds to reclaim).
echo
echo "figures (full output in $out):"
awk '
	/^pkg:/ { n = split($2, parts, "/"); pkg = parts[n] }
	/^Benchmark/ {
		name = $1
		sub(/-[0-9]+$/, "", name)
		line = ""
		for (i = 3; i < NF; i += 2) {
			unit = $(i + 1)
			if (unit == "ns/op" || unit == "B/op" || unit == "allocs/op") continue
			line = line sprintf("  %s %s", $i, unit)
		}
		if (line != "") printf "  %-10s %-44s%s\n", pkg, name, line
	}
' "$out"

# Pipeline throughput on the 1M-row dataset, databases included.
go run ./internal/testpg/withpg bash scripts/bench-pipeline.sh
