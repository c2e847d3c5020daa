#!/usr/bin/env bash
# Installs openapi/'s npm packages (the TypeScript client's dependency and the
# SDK generators and checkers) exactly as package-lock.json pins them, unless
# node_modules already holds that very install.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/apt.sh
. scripts/apt.sh
if ! command -v npm >/dev/null; then
	apt_install nodejs npm
fi
cd openapi
stamp=node_modules/.faucet-lock-sha256
want=$(cat package.json package-lock.json ts/package.json | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	exit 0
fi
# No install scripts: none of these packages needs one, and it keeps the
# install from running code beyond the packages' own.
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
echo "$want" >"$stamp"
