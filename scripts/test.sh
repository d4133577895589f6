#!/usr/bin/env bash
# The project's test command (`npm test`): install check, lint/format, typecheck, then vitest
# against real S3/DynamoDB APIs.
#
# Endpoints: see scripts/with-aws.sh (LocalStack via AWS_ENDPOINT_URL, else local emulators).
#
# Extra arguments go to `vitest run`, e.g. `npm test -- test/integration`.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ ! -d node_modules || ! -f node_modules/.package-lock.json ||
  package-lock.json -nt node_modules/.package-lock.json ]]; then
  echo '[test] node_modules missing or older than package-lock.json: npm ci' >&2
  npm ci
fi

echo '[test] biome check .' >&2
npx biome check .

echo '[test] tsc --noEmit' >&2
npx tsc --noEmit

bash console/prepare-test.sh
echo '[test] vitest run (with S3 and DynamoDB endpoints)' >&2
exec bash scripts/with-aws.sh npx vitest run "$@"
