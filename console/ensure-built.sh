#!/usr/bin/env bash
# Builds the console and docs assets (npm run build:console) when dist/static is missing or
# older than their sources; a fresh clone has none. Used by `npm start` and the test command.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
stamp=dist/static/docs/manifest.json
if [[ -f $stamp && -z $(find console package-lock.json -newer "$stamp" -type f -print -quit) ]]; then
  exit 0
fi
echo '[console] building the console and docs assets (npm run build:console)' >&2
npm run --silent build:console
