#!/usr/bin/env bash
# Builds a tool pinned by a wrapper Go module into .cache/<tool>/<version>/<tool> and prints its path.
# Skips the build when that binary is already there. The wrapper module is hack/<tool>/ for the
# project's own tools, bench/comparisons/peers/<tool>/ for the policy engines bench/comparisons/peers.ts compares (those are never
# part of make test or CI: only `npm run bench -- peers` builds them, several minutes each).
#   hack/build-go-tool.sh crane        (github.com/google/go-containerregistry/cmd/crane)
#   hack/build-go-tool.sh helm         (helm.sh/helm/v4/cmd/helm)
#   hack/build-go-tool.sh promtool     (github.com/prometheus/prometheus/cmd/promtool, ADR 0033)
#   hack/build-go-tool.sh syft         (github.com/anchore/syft/cmd/syft, the release SBOM, ADR 0010)
#   hack/build-go-tool.sh kyverno      (github.com/kyverno/kyverno/cmd/kyverno)
#   hack/build-go-tool.sh gatekeeper   (github.com/open-policy-agent/gatekeeper/v3, module root)
#   hack/build-go-tool.sh capsule      (github.com/projectcapsule/capsule/cmd/controller, ADR 0012)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tool=${1:?usage: build-go-tool.sh crane|helm|promtool|syft|kyverno|gatekeeper|capsule}
dir=hack
tags=""
case "$tool" in
  crane)      module=github.com/google/go-containerregistry; pkg=$module/cmd/crane; ldflags="" ;;
  helm)       module=helm.sh/helm/v4; pkg=$module/cmd/helm
              ldflags="-X helm.sh/helm/v4/internal/version.version=VERSION" ;;
  # remove_all_sd: Prometheus' own build tag that leaves out every service-discovery plugin (AWS,
  # Azure, GCE, ... SDKs): promtool only checks and unit-tests rule files here.
  promtool)   module=github.com/prometheus/prometheus; pkg=$module/cmd/promtool; tags=remove_all_sd
              ldflags="-X github.com/prometheus/common/version.Version=VERSION" ;;
  syft)       module=github.com/anchore/syft; pkg=$module/cmd/syft
              ldflags="-X main.version=VERSION" ;;
  kyverno)    module=github.com/kyverno/kyverno; pkg=$module/cmd/kyverno; dir=bench/comparisons/peers
              ldflags="-X github.com/kyverno/kyverno/pkg/version.BuildVersion=VERSION" ;;
  gatekeeper) module=github.com/open-policy-agent/gatekeeper/v3; pkg=$module; dir=bench/comparisons/peers; ldflags="" ;;
  capsule)    module=github.com/projectcapsule/capsule; pkg=$module/cmd/controller; dir=bench/comparisons/peers
              ldflags="-X github.com/projectcapsule/capsule/internal/version.GitTag=VERSION" ;;
  *) echo "build-go-tool: unknown tool $tool" >&2; exit 2 ;;
esac
mod="$root/$dir/$tool"
version=$(awk -v m="$module" '$1==m {print $2; exit} $1=="require" && $2==m {print $3; exit}' "$mod/go.mod")
out="$root/.cache/$tool/$version"
if [ -x "$out/$tool" ]; then echo "$out/$tool"; exit 0; fi
mkdir -p "$out"
# One build of a pin at a time: a second caller (make test's background build and a test that needs the
# tool now, or two checkouts sharing .cache) waits for the first and then finds the binary built.
exec 9>"$out/.build.lock"
flock 9
if [ -x "$out/$tool" ]; then echo "$out/$tool"; exit 0; fi
echo "building $tool $version ..." >&2
start=$(date +%s)
cd "$mod"
# -mod=mod resolves the module graph (and fills go.sum) on first build.
CGO_ENABLED=0 GOFLAGS=-mod=mod nice -n 10 go build -trimpath -tags="$tags" -ldflags="-s -w ${ldflags//VERSION/$version}" -o "$out/$tool.tmp" "$pkg"
mv "$out/$tool.tmp" "$out/$tool"
echo "built $tool $version in $(( $(date +%s) - start ))s ($(( $(stat -c %s "$out/$tool") / 1048576 )) MiB)" >&2
echo "$out/$tool"
