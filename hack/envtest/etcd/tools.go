//go:build tools

// Package tools pins the etcd server that the envtest and end-to-end suites
// build from the Go module proxy.
package tools

import _ "go.etcd.io/etcd/server/v3"
