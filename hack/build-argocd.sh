#!/usr/bin/env bash
# Builds the real Argo CD (one multi-call binary; the role comes from ARGOCD_BINARY_NAME) from the
# pinned Go module in test/cluster/argocd into .cache/argocd/<version>/argocd. Skips when present.
# argo-cd v3.6.1 declares `go 1.27.0`, newer than the Go on these machines: this build alone uses
# GOTOOLCHAIN=go1.27.4, which the go command fetches through the module proxy (see ADR 0008).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mod="$root/test/cluster/argocd"
version=$(awk '$1=="require" && $2=="github.com/argoproj/argo-cd/v3" {print $3; exit}
               $1=="github.com/argoproj/argo-cd/v3" {print $2; exit}' "$mod/go.mod")
out="${TG_ARGOCD_BIN:-$root/.cache/argocd/$version/argocd}"
crds="$(dirname "$out")/crds"
cd "$mod"
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN="${TG_ARGOCD_GOTOOLCHAIN:-go1.27.4}"
# From the module zip, next to the binary: the Application, AppProject and ApplicationSet CRDs of the same release, and
# git-verify-wrapper.sh, which the image puts on the repo-server's PATH (it runs it for every revision).
helpers="$(dirname "$out")/bin"
mkdir -p "$(dirname "$out")"
# One build of a pin at a time: a second caller (make test's background build and a test that needs the
# tool now, or two checkouts sharing .cache) waits for the first and then finds the binary built.
exec 9>"$out.build.lock"
flock 9
if [ ! -f "$crds/appproject-crd.yaml" ] || [ ! -f "$crds/applicationset-crd.yaml" ] || [ ! -x "$helpers/git-verify-wrapper.sh" ]; then
  # `go list -m` names no Dir for a module that is not in the module cache yet (a fresh machine).
  go mod download github.com/argoproj/argo-cd/v3
  src=$(go list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v3)
  if [ -z "$src" ] || [ ! -d "$src/manifests/crds" ]; then
    echo "build-argocd: github.com/argoproj/argo-cd/v3 is not in the module cache (got '$src')" >&2
    exit 1
  fi
  mkdir -p "$crds" "$helpers"
  cp "$src/manifests/crds/application-crd.yaml" "$src/manifests/crds/appproject-crd.yaml" "$src/manifests/crds/applicationset-crd.yaml" "$crds/"
  cp "$src/hack/git-verify-wrapper.sh" "$helpers/"
  chmod u+w "$crds"/*.yaml "$helpers"/*
  chmod +x "$helpers/git-verify-wrapper.sh"
fi
if [ -x "$out" ]; then echo "$out"; exit 0; fi
pkg=github.com/argoproj/argo-cd/v3/common
stamp="-X $pkg.version=${version#v} -X $pkg.gitTag=$version -X $pkg.gitTreeState=clean"
stamp="$stamp -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "building argocd $version (toolchain $GOTOOLCHAIN) ..." >&2
start=$(date +%s)
go build -trimpath -ldflags="-s -w $stamp" -o "$out.tmp" github.com/argoproj/argo-cd/v3/cmd >&2
mv "$out.tmp" "$out"
echo "built argocd $version in $(( $(date +%s) - start ))s, $(du -m "$out" | cut -f1) MB" >&2
echo "$out"
