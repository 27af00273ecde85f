//go:build tools

// Package tools pins Capsule's controller binary (its manager with the webhooks; `hack/build-go-tool.sh
// capsule` builds it into .cache/capsule/<version>/) for bench/comparisons/peers (ADR 0012); never part of make test.
package tools

import _ "github.com/projectcapsule/capsule/cmd/controller"
