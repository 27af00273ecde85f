#!/usr/bin/env bash
# Installs the pinned kustomize (used by `tenantgate render` for directories with kustomization.yaml,
# as Argo CD's repo-server does) into .cache/tools/kustomize-<version>/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=v5.8.2  # v5.8.3 needs Go 1.27; these machines have Go 1.26
dir="$root/.cache/tools/kustomize-$version"
if [ -x "$dir/kustomize" ]; then echo "$dir/kustomize"; exit 0; fi
mkdir -p "$dir"
GOBIN="$dir" CGO_ENABLED=0 GOFLAGS= go install "sigs.k8s.io/kustomize/kustomize/v5@$version"
echo "$dir/kustomize"
