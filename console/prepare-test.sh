#!/usr/bin/env bash
# What the console's browser tests need, for the test command: the built assets, and
# Debian's Chromium (installed as root when missing, like the emulators' packages).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash console/ensure-built.sh
if [[ ! -x /usr/bin/chromium && $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
  echo '[console] installing chromium (apt-get)' >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 ||
    { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends chromium >/dev/null; }
fi
