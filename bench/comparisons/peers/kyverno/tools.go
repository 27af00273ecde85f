//go:build tools

// Package tools pins Kyverno's admission controller binary (`hack/build-go-tool.sh kyverno` builds it
// into .cache/kyverno/<version>/) for bench/comparisons/peers; it is never part of make test.
package tools

import _ "github.com/kyverno/kyverno/cmd/kyverno"
