#!/usr/bin/env bash
# Install the Debian packages the tests need (lua5.4 for the Argo CD health-check test, git;
# mmdebstrap, jq and curl for `make image`; redis-server for the real Argo CD of the argocd e2e tests).
# Idempotent: does nothing when everything is present; runs `apt-get update` only when a package
# cannot be installed from the current package lists. Called by CI. With arguments, only those
# commands (e.g. `hack/install-debian-deps.sh lua5.4 git pre-commit` for the unit tests).
set -euo pipefail

# command -> Debian package
declare -A PKGS=(
  [lua5.4]=lua5.4
  [git]=git
  [pre-commit]=pre-commit
  [mmdebstrap]=mmdebstrap
  [jq]=jq
  # hack/build-image.sh waits for crane's local registry with curl.
  [curl]=curl
  # Argo CD's repo-server and application controller cache in Redis (test/support/argocd.ts).
  [redis-server]=redis-server
  # test/e2e/kubectl-plugin.test.ts runs `kubectl tenantgate` in a terminal to check its human output.
  [tmux]=tmux
)

wanted=("$@")
[ "${#wanted[@]}" -gt 0 ] || wanted=("${!PKGS[@]}")
missing=()
for cmd in "${wanted[@]}"; do
  if [ -z "${PKGS[$cmd]:-}" ]; then
    echo "install-debian-deps: unknown command $cmd; known: ${!PKGS[*]}" >&2
    exit 2
  fi
  if ! command -v "$cmd" >/dev/null 2>&1; then
    missing+=("${PKGS[$cmd]}")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-debian-deps: missing ${missing[*]} and no apt-get on this machine; install them by hand" >&2
  exit 1
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    echo "install-debian-deps: missing ${missing[*]}; need root or sudo to install them" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
# Update the package lists only when needed: when they are absent, or when a package is unknown.
need_update=0
if [ -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v -e '^lock$' -e '^partial$' || true)" ]; then
  need_update=1
else
  for pkg in "${missing[@]}"; do
    if ! apt-cache show "$pkg" >/dev/null 2>&1; then
      need_update=1
      break
    fi
  done
fi
if [ "$need_update" -eq 1 ]; then
  "${SUDO[@]}" apt-get update -qq
fi

if ! "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
  # Stale lists (a package version no longer on the mirror): refresh once and retry.
  "${SUDO[@]}" apt-get update -qq
  "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

echo "install-debian-deps: installed ${missing[*]}" >&2
