#!/usr/bin/env bash
# Runs faucet's benchmarks against real SQLite files and a throwaway PostgreSQL
# server and prints their figures. Benchmarks measure; tests never time things.
set -euo pipefail
cd "$(dirname "$0")/.."

go run ./internal/testpg/withpg go test -run '^$' -bench . -benchmem -count=1 -timeout 60m ./...

go run ./internal/testpg/withpg bash scripts/bench-pipeline.sh
