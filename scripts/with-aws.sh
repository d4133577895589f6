#!/usr/bin/env bash
# Runs a command with S3 and DynamoDB endpoints in its environment:
#
# - AWS_ENDPOINT_URL set (e.g. LocalStack at http://localhost:4566): start nothing, point the S3
#   and DynamoDB endpoints at it.
# - Otherwise: start the local emulators (Ceph radosgw + DynamoDB Local, scripts/emulators/),
#   and stop them on exit unless HEFESTO_KEEP_EMULATORS=1 or they were already running.
#
# Usage: bash scripts/with-aws.sh COMMAND [ARGS...]; exits with the command's code.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ -n ${AWS_ENDPOINT_URL:-} ]]; then
  echo "[aws] AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL: using it for S3 and DynamoDB, starting no emulators" >&2
  export AWS_ENDPOINT_URL_S3="${AWS_ENDPOINT_URL_S3:-$AWS_ENDPOINT_URL}"
  export AWS_ENDPOINT_URL_DYNAMODB="${AWS_ENDPOINT_URL_DYNAMODB:-$AWS_ENDPOINT_URL}"
  export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}"
  export AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
  export AWS_REGION="${AWS_REGION:-us-east-1}"
  export HEFESTO_S3_FORCE_PATH_STYLE="${HEFESTO_S3_FORCE_PATH_STYLE:-true}"
else
  if bash scripts/emulators/start.sh --check; then
    echo '[aws] emulators already running: reusing them (left running afterwards)' >&2
    bash scripts/emulators/start.sh
  else
    bash scripts/emulators/start.sh
    if [[ ${HEFESTO_KEEP_EMULATORS:-} != 1 ]]; then
      trap 'bash scripts/emulators/stop.sh' EXIT
    fi
  fi
  # shellcheck disable=SC1091
  source "${HEFESTO_EMU_DIR:-.emulators}/env"
fi

set +e
"$@"
code=$?
set -e
exit "$code"
