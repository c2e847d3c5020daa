#!/usr/bin/env bash
# Runs every faucet test. Tests use real components: SQLite files in temporary
# directories and a throwaway PostgreSQL server, started here from the machine's
# PostgreSQL binaries (installed first when missing and we are allowed to) and
# removed afterwards. Set TEST_DATABASE_URL to use an existing server instead.
# npm (for the TypeScript SDK check) is installed the same way when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

have_pg_binaries() {
	[ -n "${FAUCET_PG_BIN:-}" ] || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || command -v initdb >/dev/null
}

# Installs Debian packages when we are allowed to (root with apt-get).
apt_install() {
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "test: installing $*" >&2
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
	else
		echo "test: missing $*; install them (or, for PostgreSQL, set TEST_DATABASE_URL)" >&2
		exit 1
	fi
}

if [ -z "${TEST_DATABASE_URL:-}" ] && ! have_pg_binaries; then
	apt_install postgresql
fi
# The OpenAPI tests compile a generated TypeScript SDK with npm's tools.
if ! command -v npm >/dev/null; then
	apt_install nodejs npm
fi

go run ./internal/testpg/withpg go test -race -count=1 -timeout 30m ./...

# The config loader's fuzz target, briefly, on top of its seed corpus (which
# the run above already checked).
go test -run '^$' -fuzz '^FuzzLoad$' -fuzztime 15s ./pipeline
