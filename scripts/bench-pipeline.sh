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

# The same CSV→JSONL pipeline as a user runs it: `faucet run` prints its
# summary; GNU time adds wall time and the peak RSS of the faucet process.
cat > "$work/csv-to-jsonl.yaml" <<YAML
version: 1
name: csv-to-jsonl
pipeline:
  source: {type: csv, config: {path: "$work/data.csv"}}
  sink: {type: jsonl, config: {path: "$work/out.jsonl"}}
YAML
echo
echo "faucet run csv-to-jsonl.yaml ($rows rows):"
if [ -x /usr/bin/time ]; then
	/usr/bin/time -f "wall %es, faucet peak RSS %M KiB (plugins excluded)" "$work/faucet" run "$work/csv-to-jsonl.yaml"
else
	"$work/faucet" run "$work/csv-to-jsonl.yaml"
fi
