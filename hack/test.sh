#!/usr/bin/env bash
# `make test`: the whole suite from whatever this machine has, empty caches included.
#
# The Go builds wait on nothing but the module proxy and are most of an empty machine's time, so they
# start first, in the background (hack/build-all.sh), in two sets:
#   early (normal priority): the control plane's newest and oldest minor and Helm, which nearly every
#         integration and end-to-end file needs;
#   late (nice 19, so they take only the CPU nothing else wants): crane, promtool, syft and Argo CD,
#         which only the files in LATE_TOOL_FILES (test/support/e2e-shards.ts) use.
# Meanwhile the foreground installs Node 24, the npm packages and the Debian packages, builds kustomize,
# compiles and lints. Once the early builds are done, the early wave of integration and end-to-end files
# runs while the late builds go on beside it; then the late wave.
#
# The unit tests run after the early wave, beside the wait for the late builds and the late wave, at
# nice 10: that wave keeps about one core of two busy (measured 0.85–1.26 cores), while the early wave
# keeps both, so the unit tests take the idle core instead of minutes of their own before the e2e
# files. Their output is prefixed [unit] and kept in .cache/unit.log; make test fails if they do.
#
# The early wave runs in E2E_SHARDS (default 2) vitest processes side by side, the late one in
# E2E_LATE_SHARDS (default 1: its Argo CD files sync while the controller creates the same namespace
# objects, a race that two shards' load made Argo CD lose once), each process with its own shared
# control plane (test/support/global-setup.ts); the files are split by measured wall time
# (test/support/e2e-shards.ts). Each line is prefixed with its wave and shard; each shard's output is
# also kept in .cache/e2e-<wave>-<i>.log (hack/e2e-seconds.ts reads each file's seconds from it).
#
# Each phase's wall time goes to .cache/test-phases.tsv and is printed at the end, with each build's
# (docs/testing.md keeps the figures of an empty machine).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mkdir -p .cache/build-logs
phases=.cache/test-phases.tsv
: > "$phases"
began=$(date +%s)
phase() { # name command...
  local name=$1 start rc=0
  shift
  start=$(date +%s)
  echo "== $name"
  "$@" || rc=$?
  printf '%s\t%s%s\n' "$name" "$(( $(date +%s) - start ))" "$([ "$rc" = 0 ] || echo "  FAILED (exit $rc)")" >> "$phases"
  return "$rc"
}
report() {
  printf '%s\t%s\n' total "$(( $(date +%s) - began ))" >> "$phases"
  echo "== wall seconds per phase (the Go builds ran beside them from the start):"
  awk -F'\t' '{ n = $2 + 0; rest = $2; sub(/^[0-9]+/, "", rest); printf "  %-16s %5ss%s\n", $1, n, rest }' "$phases"
  local log
  for log in .cache/e2e-*.log .cache/unit.log; do # what failed, so that the last lines of a red run name it
    [ -f "$log" ] || continue
    # (vitest colours its output: strip the escapes before matching)
    if sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -qE '^ *(FAIL|Test Files .*failed)'; then
      echo "== failures in $log:"
      sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^ *(FAIL |Test Files |Tests )' | sort -u | head -40
    fi
  done
  for set in early late; do
    [ ! -f ".cache/build-logs/times-$set.tsv" ] || { echo "== Go builds, $set set (side by side, from the start):"; awk -F'\t' '{ printf "  %-22s %5ss\n", $1, $2 }' ".cache/build-logs/times-$set.tsv"; }
  done
  # Last, so that a report showing only the tail of the output still says why: each failed test's
  # first error line (vitest's failure details: a "FAIL file > test" line, then the error).
  for log in .cache/e2e-*.log .cache/unit.log; do
    [ -f "$log" ] || continue
    sed 's/\x1b\[[0-9;]*m//g' "$log" | awk '
      /^ *FAIL .* > / { failed = substr($0, 1, 200); next }
      failed != "" && /(Error|expected|not reached)/ { print "  " failed; print "    " substr($0, 1, 600); failed = "" }
    ' | head -24 | sed "1i == why, in $log:"
  done
}
trap report EXIT
rm -f .cache/build-logs/times-early.tsv .cache/build-logs/times-late.tsv .cache/e2e-*.log .cache/unit.log

BUILD_SET=early hack/build-all.sh control-plane control-plane-oldest helm > .cache/build-logs/early.log 2>&1 &
early_builds=$!
BUILD_SET=late nice -n 19 hack/build-all.sh crane promtool syft argocd > .cache/build-logs/late.log 2>&1 &
late_builds=$!

phase node-deps make --no-print-directory deps
phase debian-deps hack/install-debian-deps.sh
phase kustomize hack/install-kustomize.sh
phase build bash -c 'rm -rf dist && npx tsc -p tsconfig.json'
phase lint npm run --silent lint

wait_builds() { # pid set
  if ! wait "$1"; then cat ".cache/build-logs/$2.log" >&2; return 1; fi
  cat ".cache/build-logs/$2.log"
}
e2e_wave() { # wave shards
  local wave=$1 n=$2 i rc=0
  local pids=()
  for i in $(seq 1 "$n"); do
    ( set -o pipefail
      TG_E2E_WAVE="$wave" npx vitest run --project integration --shard="$i/$n" \
        2>&1 | tee ".cache/e2e-$wave-$i.log" | sed -u "s|^|[e2e $wave $i/$n] |" ) &
    pids+=("$!")
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || { rc=1; echo "== e2e $wave shard $(( i + 1 ))/$n failed"; }
  done
  return "$rc"
}
unit_tests() { # in the background: its own phase line, its output prefixed
  local start rc=0
  start=$(date +%s)
  ( set -o pipefail
    nice -n 10 npx vitest run --project unit 2>&1 | tee .cache/unit.log | sed -u 's|^|[unit] |' ) || rc=$?
  printf '%s\t%s%s\n' unit "$(( $(date +%s) - start ))" "$([ "$rc" = 0 ] || echo "  FAILED (exit $rc)")" >> "$phases"
  return "$rc"
}
phase early-builds-wait wait_builds "$early_builds" early
e2e_rc=0
phase e2e-early e2e_wave early "${E2E_SHARDS:-2}" || e2e_rc=1
unit_tests &
unit_pid=$!
# A failed late build ends the run, after the unit tests (no process left behind).
phase late-builds-wait wait_builds "$late_builds" late || { wait "$unit_pid" || true; exit 1; }
phase e2e-late e2e_wave late "${E2E_LATE_SHARDS:-1}" || e2e_rc=1
phase unit-wait wait "$unit_pid" || e2e_rc=1
exit "$e2e_rc"
