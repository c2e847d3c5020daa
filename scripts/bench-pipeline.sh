#!/usr/bin/env bash
# Measures pipeline throughput on the 1,000,000-row benchmark dataset:
# CSV→JSONL through real plugin processes and through the same connector
# code in one process (the ratio is the cost of the process boundary), with
# the CPU time and peak resident memory of all faucet processes together.
# With TEST_DATABASE_URL set (task bench runs this under a throwaway
# PostgreSQL) it also measures generate→postgres (COPY) and
# postgres→postgres. BENCH_ROWS overrides the row count. Other pipelines
# are added as cases in internal/benchpipe.
set -euo pipefail
cd "$(dirname "$0")/.."

rows="${BENCH_ROWS:-1000000}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

go build -o "$work/faucet" ./cmd/faucet
go build -o "$work/benchpipe" ./internal/benchpipe
"$work/benchpipe" gen -rows "$rows" -out "$work/data.csv"
echo "pipeline benchmark: $rows rows, $(du -h "$work/data.csv" | cut -f1) of CSV, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$work/benchpipe" run -faucet "$work/faucet" -data "$work/data.csv" -rows "$rows" ${TEST_DATABASE_URL:+-pg "$TEST_DATABASE_URL"}
