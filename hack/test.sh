#!/usr/bin/env bash
# `make test`: the whole suite from whatever this machine has, empty caches included.
#
# The Go builds (hack/build-all.sh: the control plane's newest and oldest minor, Helm, crane, promtool,
# syft, Argo CD) wait on nothing but the module proxy and are most of an empty machine's time, so they
# start first, in the background, while the foreground installs Node 24, the npm packages and the
# Debian packages, compiles, lints and runs the unit tests (which need only kustomize, built in the
# foreground). The integration and end-to-end files start once every build is done.
#
# Each phase's wall time goes to .cache/test-phases.tsv and is printed at the end (docs/testing.md
# keeps the figures of an empty machine).
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
  printf '%s\t%s\n' "$name" "$(( $(date +%s) - start ))" >> "$phases"
  return "$rc"
}
report() {
  printf '%s\t%s\n' total "$(( $(date +%s) - began ))" >> "$phases"
  echo "== wall seconds per phase (the Go builds ran beside node-deps to unit):"
  awk -F'\t' '{ printf "  %-16s %5ss\n", $1, $2 }' "$phases"
  [ ! -f .cache/build-logs/times.tsv ] || { echo "== Go builds, side by side:"; awk -F'\t' '{ printf "  %-22s %5ss\n", $1, $2 }' .cache/build-logs/times.tsv; }
}
trap report EXIT

hack/build-all.sh control-plane control-plane-oldest helm crane promtool syft argocd > .cache/build-logs/all.log 2>&1 &
builds=$!

phase node-deps make --no-print-directory deps
phase debian-deps hack/install-debian-deps.sh
phase kustomize hack/install-kustomize.sh
phase build bash -c 'rm -rf dist && npx tsc -p tsconfig.json'
phase lint npm run --silent lint
phase unit npx vitest run --project unit
wait_builds() {
  if ! wait "$builds"; then cat .cache/build-logs/all.log >&2; return 1; fi
  cat .cache/build-logs/all.log
}
phase go-builds-wait wait_builds
# The integration and end-to-end files in E2E_SHARDS (default 2) vitest processes side by side, each
# with its own shared control plane; the files are split by measured wall time (test/support/e2e-shards.ts).
# Each line is prefixed with its shard; each shard's JSON report goes to .cache/e2e-report-<i>.json.
e2e_shards() {
  local n=${E2E_SHARDS:-2} i rc=0
  local pids=()
  for i in $(seq 1 "$n"); do
    ( set -o pipefail
      npx vitest run --project integration --shard="$i/$n" --reporter=default --reporter=json \
        --outputFile.json=".cache/e2e-report-$i.json" 2>&1 | sed -u "s|^|[e2e $i/$n] |" ) &
    pids+=("$!")
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || { rc=1; echo "== e2e shard $(( i + 1 ))/$n failed"; }
  done
  return "$rc"
}
phase e2e e2e_shards
