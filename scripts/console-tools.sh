#!/usr/bin/env bash
# Installs what the web console's build and browser suite use: Node.js and
# npm (with apt-get when missing), server/console/web's npm packages exactly
# as its package-lock.json pins them (unless node_modules already holds that
# very install), and with --browser Debian's Chromium at /usr/bin/chromium,
# the browser the suite drives. No browser is ever downloaded by npm.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/apt.sh
. scripts/apt.sh
if ! command -v npm >/dev/null; then
	apt_install nodejs npm
fi
if [ "${1:-}" = --browser ] && [ ! -x /usr/bin/chromium ]; then
	apt_install chromium
fi
cd server/console/web
stamp=node_modules/.faucet-lock-sha256
want=$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	exit 0
fi
# No install scripts: none of these packages needs one (playwright-core's
# would fetch nothing either), and it keeps the install from running code
# beyond the packages' own.
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
echo "$want" >"$stamp"
