#!/bin/sh
# Drops what Node never loads at run time from production node_modules (type declarations,
# source maps): about 45 MB, mostly @kubernetes/client-node. Shared by hack/build-image.sh and the Dockerfile.
set -eu
find "${1:?usage: prune-node-modules.sh NODE_MODULES}" -type f \
  \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' \) -delete
rm -f "$1/.package-lock.json"
