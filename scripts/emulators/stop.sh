#!/usr/bin/env bash
# Stop the emulators started by scripts/emulators/start.sh (by pid files), wait for them to exit,
# and remove the Ceph memstore/mon state. Safe to call when nothing runs. Logs are kept.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"
STATE="${HEFESTO_EMU_DIR:-$REPO_ROOT/.emulators}"
RUN="$STATE/run"

# name in pid file -> executable expected in /proc/PID/cmdline (guards against recycled pids)
declare -A EXPECT=([radosgw]=radosgw [ceph-osd]=ceph-osd [ceph-mon]=ceph-mon [ddb]=java)

# Running and not a zombie (daemons are reparented; a zombie may linger until its reaper runs).
alive() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $state && $state != Z && $state != X ]]
}

# Send SIGTERM to the named daemons, wait up to $1 seconds, then SIGKILL the rest.
stop_group() { # timeout_s names...
  local timeout=$1 name f pid i
  shift
  local pids=()
  for name in "$@"; do
    f="$RUN/$name.pid"
    [[ -f $f ]] || continue
    pid=$(<"$f")
    if [[ -n $pid ]] && alive "$pid" &&
      tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "${EXPECT[$name]}"; then
      echo "[emulators] stopping $name (pid $pid)" >&2
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
  done
  for ((i = 0; i < timeout * 20; i++)); do
    local left=0
    for pid in "${pids[@]}"; do alive "$pid" && left=1; done
    ((left)) || return 0
    sleep 0.05
  done
  for pid in "${pids[@]}"; do
    if alive "$pid"; then
      echo "[emulators] pid $pid did not exit in ${timeout}s; sending SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  for ((i = 0; i < 100; i++)); do
    local left=0
    for pid in "${pids[@]}"; do alive "$pid" && left=1; done
    ((left)) || return 0
    sleep 0.05
  done
}

# radosgw first (its shutdown needs the cluster), then the OSD, then the monitor.
# DynamoDB Local stops alongside radosgw.
stop_group 10 radosgw ddb
stop_group 10 ceph-osd
stop_group 10 ceph-mon

rm -rf "$STATE/ceph" "$RUN" "$STATE/env"
echo "[emulators] stopped" >&2
