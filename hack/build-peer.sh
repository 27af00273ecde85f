#!/usr/bin/env bash
# Kept for the commands in the docs: builds a policy engine compared in bench/peers (kyverno|gatekeeper)
# with hack/build-go-tool.sh, which does the work (wrapper module bench/peers/<peer>/, cached in .cache/).
set -euo pipefail
case "${1:-}" in
  kyverno|gatekeeper) exec "$(dirname "$0")/build-go-tool.sh" "$1" ;;
  *) echo "usage: build-peer.sh kyverno|gatekeeper" >&2; exit 2 ;;
esac
