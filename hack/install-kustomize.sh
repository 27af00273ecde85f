#!/usr/bin/env bash
# Installs the pinned kustomize (used by `tenantgate render` for directories with kustomization.yaml,
# as Argo CD's repo-server does) into .cache/tools/kustomize-<version>/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=v5.8.2  # v5.8.3 needs Go 1.27; these machines have Go 1.26
dir="$root/.cache/tools/kustomize-$version"
if [ -x "$dir/kustomize" ]; then echo "$dir/kustomize"; exit 0; fi
mkdir -p "$dir"
# One build of a pin at a time: a second caller (make test's background build and a test that needs the
# tool now, or two checkouts sharing .cache) waits for the first and then finds the binary built.
exec 9>"$dir/.build.lock"
flock 9
if [ -x "$dir/kustomize" ]; then echo "$dir/kustomize"; exit 0; fi
GOBIN="$dir" CGO_ENABLED=0 GOFLAGS= go install "sigs.k8s.io/kustomize/kustomize/v5@$version"
echo "$dir/kustomize"
