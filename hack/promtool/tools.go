//go:build tools

// Package tools pins Prometheus' promtool (`hack/build-go-tool.sh promtool` builds it into
// .cache/promtool/<version>/), used to check and unit-test the chart's PrometheusRules (ADR 0033).
// Module v0.316.0 is Prometheus v3.16.0 (the Go module carries 0.<minor×100+…> versions).
package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"
