#!/bin/sh
# Turns an mmdebstrap --variant=extract tree into the image's root filesystem (shared by
# hack/build-image.sh and the Dockerfile, so both build the same image):
# drops host files, device nodes and apt leftovers, documentation other than copyright files,
# manuals and translations; writes the users the image runs as: nonroot (65532; webhook and
# controller) and argocd (999; the Argo CD plugin sidecar).
set -eu
cd "${1:?usage: finish-rootfs.sh ROOTFS}"
rm -rf etc/resolv.conf etc/hostname dev/* var/cache/apt var/lib/apt var/log/* run/*
find usr/share/doc -mindepth 2 ! -name copyright ! -type d -delete
find usr/share/doc -mindepth 1 -type d -empty -delete
rm -rf usr/share/man usr/share/info usr/share/locale usr/share/lintian
cat > etc/passwd <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
argocd:x:999:999:Argo CD plugin sidecar:/home/argocd:/usr/sbin/nologin
nonroot:x:65532:65532:tenantgate:/home/nonroot:/usr/sbin/nologin
PASSWD
cat > etc/group <<'GROUP'
root:x:0:
argocd:x:999:
nonroot:x:65532:
GROUP
mkdir -p home/nonroot home/argocd
chown 65532:65532 home/nonroot
chown 999:999 home/argocd
chmod 1777 tmp
