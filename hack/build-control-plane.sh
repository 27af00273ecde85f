#!/usr/bin/env bash
# Builds the control plane from a pinned Go module into .cache/k8s/<version>[-etcd<version>]/bin, skipping
# what is already built for that version (so a binary is rebuilt only when the pin changes).
#   hack/build-control-plane.sh              test/cluster/gobuild: the newest tested Kubernetes (kube-apiserver,
#                                            kube-controller-manager, kubectl) and the shared etcd
#   hack/build-control-plane.sh gobuild-1.35 the oldest supported minor (ADR 0077): no etcd of its own (it
#                                            runs against the etcd built from test/cluster/gobuild)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mod="$root/test/cluster/${1:-gobuild}"
[ -f "$mod/go.mod" ] || { echo "no Go module at $mod (expected test/cluster/gobuild or test/cluster/gobuild-<minor>)" >&2; exit 1; }
version=$(awk '$1=="k8s.io/kubernetes" {print $2; exit} $1=="require" && $2=="k8s.io/kubernetes" {print $3; exit}' "$mod/go.mod")
etcd_version=$(awk '$1=="go.etcd.io/etcd/server/v3" && $NF!="indirect" {print $2; exit}' "$mod/go.mod")
# TG_K8S_BIN (the tests' override of the pinned binaries) names the pinned module's output only.
default_out="$root/.cache/k8s/$version${etcd_version:+-etcd$etcd_version}/bin"
if [ "${1:-gobuild}" = gobuild ]; then out="${TG_K8S_BIN:-$default_out}"; else out="${TG_K8S_OLDEST_BIN:-$default_out}"; fi
mkdir -p "$out"
# One build of a pin at a time: a second caller (make test's background build and a test that needs the
# tool now, or two checkouts sharing .cache) waits for the first and then finds the binary built.
exec 9>"$out/.build.lock"
flock 9
cd "$mod"
export CGO_ENABLED=0 GOFLAGS=-mod=mod
# The binaries one `go build` makes together: packages they share are compiled once and the links run side by
# side (one build per binary compiled and linked one after another). The stamp's -X flags name packages etcd
# does not link, which the linker ignores.
# Stamp the release into the binaries (as the Kubernetes build does) so `version` and skew checks are right.
minor=$(echo "$version" | cut -d. -f2)
stamp=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  stamp="$stamp -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done
declare -A packages=(
  [kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
  [kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
  [kubectl]=k8s.io/kubernetes/cmd/kubectl
)
if [ -n "$etcd_version" ]; then packages[etcd]=go.etcd.io/etcd/server/v3; fi
missing=()
for name in "${!packages[@]}"; do
  if [ -x "$out/$name" ]; then echo "have $out/$name"; else missing+=("$name"); fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "building ${missing[*]} ..."
  start=$(date +%s)
  tmp="$out/.build"
  rm -rf "$tmp" && mkdir -p "$tmp"
  pkgs=()
  for name in "${missing[@]}"; do pkgs+=("${packages[$name]}"); done
  go build -trimpath -ldflags="-s -w $stamp" -o "$tmp/" "${pkgs[@]}"
  # go build names each binary after its import path's last element, a major-version suffix skipped:
  # go.etcd.io/etcd/server/v3 becomes "server".
  [ ! -f "$tmp/server" ] || mv "$tmp/server" "$tmp/etcd"
  for name in "${missing[@]}"; do mv "$tmp/$name" "$out/$name"; done
  rm -rf "$tmp"
  echo "built ${missing[*]} in $(( $(date +%s) - start ))s"
fi
echo "$out"
