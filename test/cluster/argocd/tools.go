//go:build tools

// Package tools pins Argo CD's command package so `go build github.com/argoproj/argo-cd/v3/cmd`
// resolves from this module.
package tools

import _ "github.com/argoproj/argo-cd/v3/cmd"
