#!/usr/bin/env bash
# Measures faucet's data plane on the 1,000,000-row benchmark dataset, in
# one sitting, every figure next to a reference measured in the same run:
# CSV→JSONL (against a plain Go program), and with TEST_DATABASE_URL set
# (task bench runs this under a throwaway PostgreSQL) Postgres→Postgres,
# CSV→Postgres and Postgres→JSONL (against psql's \copy), each through
# plugin processes and in one process; then `faucet run` as a user runs it:
# the peak PSS of its process tree, the plugins' peak RSS on a 10M-row
# input (BENCH_BIG_ROWS, 0 skips it), and the speedup of 2 shards, through
# `faucet run --shards 2` and through one `faucet serve` outside a cluster.
# BENCH_ROWS overrides the row count, BENCH_REPEAT the runs per figure
# (three times as many for the dead-letter ratios);
# BENCH_ONLY=dead-letters measures only CSV → Postgres with dead letters,
# BENCH_ONLY=shards only the shard speedups.
# The machine's load is printed before and after: the figures are only as
# good as the machine is quiet. Other pipelines are added as cases in
# internal/benchpipe.
set -euo pipefail
cd "$(dirname "$0")/.."

rows="${BENCH_ROWS:-1000000}"
work="$(mktemp -d)"
# The pipelines' output goes to a tmpfs where there is one: the figures are
# faucet's and the references', not the disk's writeback.
out="$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)"
trap 'rm -rf "$work" "$out"' EXIT

psql="$(compgen -G '/usr/lib/postgresql/*/bin/psql' | sort -V | tail -1 || true)"
psql="${psql:-$(command -v psql || true)}"
if [ -n "${TEST_DATABASE_URL:-}" ] && [ -z "$psql" ]; then
	echo "bench-pipeline: the Postgres references need psql" >&2
	exit 1
fi

go build -o "$work/faucet" ./cmd/faucet
go build -o "$work/benchpipe" ./internal/benchpipe
"$work/benchpipe" gen -rows "$rows" -out "$work/data.csv"
echo "pipeline benchmark: $rows rows, $(du -h "$work/data.csv" | cut -f1) of CSV, output to $(df --output=fstype "$out" | tail -1), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$work/benchpipe" run -faucet "$work/faucet" -data "$work/data.csv" -rows "$rows" -out "$out" \
	-repeat "${BENCH_REPEAT:-5}" -big-rows "${BENCH_BIG_ROWS:-10000000}" ${BENCH_ONLY:+-only "$BENCH_ONLY"} \
	${TEST_DATABASE_URL:+-pg "$TEST_DATABASE_URL" -psql "$psql"}
echo "load afterwards $(cut -d' ' -f1-3 /proc/loadavg)"
