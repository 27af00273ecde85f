//go:build tools

// Package tools pins OPA Gatekeeper (its module root is the manager's main package;
// `hack/build-go-tool.sh gatekeeper` builds it into .cache/gatekeeper/<version>/) for bench/peers.
package tools

import _ "github.com/open-policy-agent/gatekeeper/v3"
