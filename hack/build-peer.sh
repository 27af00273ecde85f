#!/usr/bin/env bash
# Builds a policy engine compared in bench/peers from its wrapper Go module bench/peers/<peer>/ into
# .cache/<peer>/<version>/<peer> and prints its path. Skips when the binary is already there.
# Never part of make test or CI: only `npm run bench -- peers` calls it.
#   hack/build-peer.sh kyverno      (github.com/kyverno/kyverno/cmd/kyverno)
#   hack/build-peer.sh gatekeeper   (github.com/open-policy-agent/gatekeeper/v3, module root)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
peer=${1:?usage: build-peer.sh kyverno|gatekeeper}
case "$peer" in
  kyverno)    module=github.com/kyverno/kyverno; pkg=$module/cmd/kyverno
              ldflags="-X github.com/kyverno/kyverno/pkg/version.BuildVersion=VERSION" ;;
  gatekeeper) module=github.com/open-policy-agent/gatekeeper/v3; pkg=$module; ldflags="" ;;
  *) echo "build-peer: unknown peer $peer" >&2; exit 2 ;;
esac
mod="$root/bench/peers/$peer"
version=$(awk -v m="$module" '$1==m {print $2; exit} $1=="require" && $2==m {print $3; exit}' "$mod/go.mod")
out="$root/.cache/$peer/$version"
if [ -x "$out/$peer" ]; then echo "$out/$peer"; exit 0; fi
mkdir -p "$out"
echo "building $peer $version (several minutes) ..." >&2
start=$(date +%s)
cd "$mod"
# -mod=mod resolves the module graph (and fills go.sum) on first build.
CGO_ENABLED=0 GOFLAGS=-mod=mod nice -n 10 go build -trimpath -ldflags="-s -w ${ldflags//VERSION/$version}" -o "$out/$peer.tmp" "$pkg"
mv "$out/$peer.tmp" "$out/$peer"
echo "built $peer $version in $(( $(date +%s) - start ))s ($(( $(stat -c %s "$out/$peer") / 1048576 )) MiB)" >&2
echo "$out/$peer"
