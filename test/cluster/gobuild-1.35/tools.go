//go:build tools

// Package tools pins the oldest supported Kubernetes minor's control-plane binaries (ADR 0077):
// kube-apiserver, kube-controller-manager and kubectl. etcd is the one built from test/cluster/gobuild.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
