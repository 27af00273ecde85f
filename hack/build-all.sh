#!/usr/bin/env bash
# Builds every pinned Go binary `make test` needs, all at once: the control plane (newest and oldest
# minor), kustomize, Helm, crane, promtool, syft and Argo CD. They depend on nothing but the Go module
# proxy, so running them side by side lets one build's module download overlap another's compile and link
# (on two cores, one after another left the CPU idle for minutes). Each build skips what is already built
# for its pin, so a warm machine passes through in seconds.
#   hack/build-all.sh            build all, print each build's wall time, fail if any failed
#   hack/build-all.sh NAME...    only those (control-plane control-plane-oldest kustomize helm crane
#                                promtool syft argocd)
# Logs: .cache/build-logs/<name>.log; times: .cache/build-logs/times[-$BUILD_SET].tsv (name, seconds,
# exit code), BUILD_SET naming a set when several run at once (hack/test.sh's early and late builds).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
logs="$root/.cache/build-logs"
mkdir -p "$logs"
times="$logs/times${BUILD_SET:+-$BUILD_SET}.tsv"
all=(control-plane control-plane-oldest kustomize helm crane promtool syft argocd)
names=("$@")
[ "${#names[@]}" -gt 0 ] || names=("${all[@]}")

# What a failed download from the module proxy (or the toolchain's) looks like in go's output.
TRANSIENT='TLS handshake timeout|i/o timeout|connection reset by peer|connection refused|unexpected EOF|Client.Timeout|502 Bad Gateway|503 Service Unavailable|504 Gateway Timeout|no such host|timeout awaiting response headers'

command_of() {
  case "$1" in
    control-plane)        echo "hack/build-control-plane.sh" ;;
    control-plane-oldest) echo "hack/build-control-plane.sh gobuild-1.35" ;;
    kustomize)            echo "hack/install-kustomize.sh" ;;
    helm|crane|promtool|syft) echo "hack/build-go-tool.sh $1" ;;
    argocd)               echo "hack/build-argocd.sh" ;;
    *) echo "build-all: unknown build $1; known: ${all[*]}" >&2; return 2 ;;
  esac
}

: > "$times.part"
pids=()
for name in "${names[@]}"; do
  cmd=$(command_of "$name") || exit 2
  (
    start=$(date +%s)
    : > "$logs/$name.log"
    # A download the module proxy did not answer (a TLS handshake or connection timed out, reset) fails
    # a build that would pass a moment later: such a failure is tried again, at most twice. Each build
    # skips what it already has, so a retry resumes where the first attempt stopped.
    for attempt in 1 2 3; do
      (cd "$root" && $cmd) >> "$logs/$name.log" 2>&1
      rc=$?
      [ "$rc" -ne 0 ] && [ "$attempt" -lt 3 ] && tail -n 20 "$logs/$name.log" | grep -qE "$TRANSIENT" || break
      echo "build-all: $name failed on a download (attempt $attempt), trying again" >> "$logs/$name.log"
      sleep $(( attempt * 10 ))
    done
    printf '%s\t%s\t%s\n' "$name" "$(( $(date +%s) - start ))" "$rc" >> "$times.part"
    exit "$rc"
  ) &
  pids+=("$!")
done
failed=0
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then
    failed=1
    echo "build-all: ${names[$i]} failed; the end of $logs/${names[$i]}.log:" >&2
    tail -n 30 "$logs/${names[$i]}.log" >&2
  fi
done
sort -k2,2nr "$times.part" > "$times" && rm -f "$times.part"
echo "build-all: wall seconds per build (side by side${BUILD_SET:+, set $BUILD_SET}):"
awk -F'\t' '{ printf "  %-22s %5ss%s\n", $1, $2, ($3 == 0 ? "" : "  FAILED (exit " $3 ")") }' "$times"
exit "$failed"
