//go:build tools

// Package tools pins go-containerregistry's crane, which assembles the OCI image without a docker
// daemon (`hack/build-go-tool.sh crane` builds it into .cache/crane/<version>/).
package tools

import _ "github.com/google/go-containerregistry/cmd/crane"
