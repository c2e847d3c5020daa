#!/usr/bin/env bash
# Runs every faucet test. Tests use real components: SQLite files in temporary
# directories and a throwaway PostgreSQL server, started here from the machine's
# PostgreSQL binaries (installed first when missing and we are allowed to) and
# removed afterwards. Set TEST_DATABASE_URL to use an existing server instead.
set -euo pipefail
cd "$(dirname "$0")/.."

have_pg_binaries() {
	[ -n "${FAUCET_PG_BIN:-}" ] || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || command -v initdb >/dev/null
}

if [ -z "${TEST_DATABASE_URL:-}" ] && ! have_pg_binaries; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "test: installing PostgreSQL server binaries" >&2
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
	else
		echo "test: no PostgreSQL server binaries found; install the postgresql package or set TEST_DATABASE_URL" >&2
		exit 1
	fi
fi

go run ./internal/testpg/withpg go test -race -count=1 -timeout 30m ./...

# The config loader's fuzz target, briefly, on top of its seed corpus (which
# the run above already checked).
go test -run '^$' -fuzz '^FuzzLoad$' -fuzztime 15s ./pipeline
