#!/bin/sh
# Makes sure Bun and the project's dependencies are installed; used by `npm start` and `npm test`.
set -e
cd "$(dirname "$0")/.."
if ! command -v bun >/dev/null 2>&1; then
  echo "Installing Bun from npm..." >&2
  npm install -g bun >&2 || { echo "could not install Bun with npm; see https://bun.sh" >&2; exit 1; }
fi
stamp=node_modules/.simhost-installed
# A patch of a dependency (patches/, package.json "patchedDependencies") changed is a reinstall too.
patched=$(find patches -newer "$stamp" -type f 2>/dev/null | head -1)
if [ ! -f "$stamp" ] || [ package.json -nt "$stamp" ] || [ bun.lock -nt "$stamp" ] || [ -n "$patched" ]; then
  bun install --frozen-lockfile >&2
  touch "$stamp"
fi
