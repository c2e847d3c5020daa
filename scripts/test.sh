#!/usr/bin/env bash
# Runs every faucet test. Tests use real components: SQLite files in temporary
# directories and a throwaway PostgreSQL server, started here from the machine's
# PostgreSQL binaries (installed first when missing and we are allowed to) and
# removed afterwards. Set TEST_DATABASE_URL to use an existing server instead.
# Node.js and npm (for the TypeScript client and the SDK checks) and Graphviz
# (for the lineage graph) are installed the same way when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

have_pg_binaries() {
	[ -n "${FAUCET_PG_BIN:-}" ] || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || command -v initdb >/dev/null
}

# shellcheck source=scripts/apt.sh
. scripts/apt.sh

if [ -z "${TEST_DATABASE_URL:-}" ] && ! have_pg_binaries; then
	apt_install postgresql
fi
# The TypeScript client and the SDK checks use Node.js and the npm packages
# openapi/package-lock.json pins.
bash scripts/npm-tools.sh
# The lineage graph faucet catalog draws is checked by Graphviz rendering it.
if ! command -v dot >/dev/null; then
	apt_install graphviz
fi
# The web console's browser suite drives Debian's Chromium with the npm
# packages server/console/web/package-lock.json pins.
bash scripts/console-tools.sh --browser

go run ./internal/testpg/withpg go test -race -count=1 -timeout 30m ./...

# The config loader's fuzz target, briefly, on top of its seed corpus (which
# the run above already checked).
go test -run '^$' -fuzz '^FuzzLoad$' -fuzztime 15s ./pipeline
