#!/usr/bin/env bash
# `make release VERSION=x.y.z`: everything a release ships, for one version, into one folder
# (docs/releasing.md, ADR 0010). dist/ must be built (make release runs make build first).
#
#   tenantgate-<v>.oci.tar            the image (hack/build-image.sh: OCI layout + `docker load` archive)
#   tenantgate-<v>.spdx.json          SBOM of that image, SPDX 2.3 JSON, by the pinned syft (hack/syft)
#   tenantgate-<v>.debian-packages.txt  the Debian packages in the image, name=version (the image has no
#                                     dpkg database, so syft cannot see them: ADR 0010)
#   tenantgate-<v>.tgz                the Helm chart (`helm package` with the pinned helm, hack/helm)
#   tenantgate-npm-<v>.tgz            the npm package (`npm pack`)
#   kubectl-tenantgate-v<v>.tar.gz    the krew archive of `kubectl tenantgate` (hack/krew-manifest.ts)
#   tenantgate.yaml                   its krew manifest (names that archive's URI and sha256)
#   SHA256SUMS                        sha256 of each file above (`sha256sum -c SHA256SUMS`)
#
# VERSION must be a semantic version equal to package.json's version and the chart's version and
# appVersion (the image tag, the npm package and the krew manifest all read package.json): bump them
# together, then release.
# Env: RELEASE_DIR (default build/release/<v>), RELEASE_URI_BASE (where the krew archive will be
#      downloaded from; default https://github.com/tenantgate/tenantgate/releases/download/v<v>),
#      SOURCE_DATE_EPOCH (default: the last commit's time, as for make image).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

version=${1:-${VERSION:-}}
fail() { echo "release: $*" >&2; exit 1; }
[ -n "$version" ] || fail "no version: run make release VERSION=x.y.z (package.json has $(node -p 'require("./package.json").version'))"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || fail "VERSION is \"$version\": a semantic version without a leading v is expected (e.g. 0.1.0)"
pkg_version=$(node -p 'require("./package.json").version')
chart_version=$(awk '$1=="version:" {gsub(/"/,"",$2); print $2; exit}' charts/tenantgate/Chart.yaml)
chart_app_version=$(awk '$1=="appVersion:" {gsub(/"/,"",$2); print $2; exit}' charts/tenantgate/Chart.yaml)
[ "$pkg_version" = "$version" ] || fail "VERSION is $version but package.json's version is $pkg_version: they must be equal (bump package.json first)"
[ "$chart_version" = "$version" ] || fail "VERSION is $version but charts/tenantgate/Chart.yaml's version is $chart_version: they must be equal"
[ "$chart_app_version" = "$version" ] || fail "VERSION is $version but charts/tenantgate/Chart.yaml's appVersion is $chart_app_version: they must be equal"
[ -f dist/cli/main.js ] || fail "dist/ is missing; run make build"

out=${RELEASE_DIR:-$root/build/release/$version}
uri_base=${RELEASE_URI_BASE:-https://github.com/tenantgate/tenantgate/releases/download/v$version}
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
rm -rf "$out" && mkdir -p "$out"
work="$out/.work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

helm=$(hack/build-go-tool.sh helm)
syft=$(hack/build-go-tool.sh syft)

echo "release $version from $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- 2>/dev/null || echo ' (uncommitted changes)') into $out" >&2

# The image, built into its own folder so another `make image` can run at the same time.
image_built=$(IMAGE_OUT="$work/image" hack/build-image.sh | tail -n 1)
image="$out/tenantgate-$version.oci.tar"
mv "$image_built" "$image"
cp "$work/image/debian-packages.txt" "$out/tenantgate-$version.debian-packages.txt"

# The SBOM of that image: what syft recognises in it (the node binary, the npm packages under
# /opt/tenantgate/node_modules, the kustomize Go binary and its modules; not the Debian packages).
SYFT_CHECK_FOR_APP_UPDATE=false TMPDIR="$work" "$syft" scan "oci-archive:$image" \
  --source-name tenantgate --source-version "$version" \
  -o "spdx-json=$out/tenantgate-$version.spdx.json" -q

"$helm" package charts/tenantgate --version "$version" --app-version "$version" -d "$out" >/dev/null

npm pack --silent --pack-destination "$work" >/dev/null
mv "$work/tenantgate-$version.tgz" "$out/tenantgate-npm-$version.tgz"

npx tsx hack/krew-manifest.ts --uri-base "$uri_base" --out-dir "$out" >&2

rm -rf "$work"
(cd "$out" && LC_ALL=C find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort | xargs sha256sum > SHA256SUMS)
echo "release $version:" >&2
(cd "$out" && ls -l --block-size=K | tail -n +2) >&2
echo "$out"
