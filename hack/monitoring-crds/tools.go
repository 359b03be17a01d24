//go:build tools

// Package tools pins the Prometheus Operator's API types, from which
// `make monitoring-crds` generates the PodMonitor, ServiceMonitor and
// PrometheusRule CRDs that test/install installs in its API server (as the
// Prometheus Operator generates its own, with controller-gen).
package tools

import (
	_ "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)
