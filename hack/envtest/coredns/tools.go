//go:build tools

// Package tools pins CoreDNS, which the end-to-end suite's node runs as its
// cluster DNS, built from the Go module proxy.
package tools

import _ "github.com/coredns/coredns"
