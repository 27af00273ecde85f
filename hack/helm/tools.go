//go:build tools

// Package tools pins Helm v4 (`hack/build-go-tool.sh helm` builds it into .cache/helm/<version>/),
// used to lint and render charts/tenantgate and to generate manifests/ from it.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
