#!/usr/bin/env bash
# `npm run bench`: every benchmark, with S3/DynamoDB endpoints for the request-count figures.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[[ -d node_modules ]] || npm ci
exec bash scripts/with-aws.sh npx tsx bench/run.ts "$@"
