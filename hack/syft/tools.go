//go:build tools

// Package tools pins Anchore's syft, which writes the SBOM of the release image (`make release`,
// ADR 0010; `hack/build-go-tool.sh syft` builds it into .cache/syft/<version>/).
package tools

import _ "github.com/anchore/syft/cmd/syft"
