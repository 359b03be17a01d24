package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestSplitNamespaces(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"mq", []string{"mq"}},
		{" mq , brokers,,", []string{"mq", "brokers"}},
		{",", nil},
	}
	for _, tt := range tests {
		if got := splitNamespaces(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("splitNamespaces(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	good := config{clusterDomain: "cluster.local", namesrvImage: "namesrv:v1", maxConcurrentReconciles: 8, kubeAPIQPS: 100, kubeAPIBurst: 200}
	tests := []struct {
		name string
		edit func(*config)
		ok   bool
	}{
		{"the defaults", func(*config) {}, true},
		{"no cluster domain", func(c *config) { c.clusterDomain = "" }, false},
		{"no image", func(c *config) { c.namesrvImage = "" }, false},
		{"no reconciles", func(c *config) { c.maxConcurrentReconciles = 0 }, false},
		{"no QPS", func(c *config) { c.kubeAPIQPS = 0 }, false},
		{"a negative burst", func(c *config) { c.kubeAPIBurst = -1 }, false},
	}
	for _, tt := range tests {
		c := good
		tt.edit(&c)
		if err := c.validate(); (err == nil) != tt.ok {
			t.Errorf("%s: validate() = %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}

func TestDefaultIdentity(t *testing.T) {
	file := filepath.Join(t.TempDir(), "namespace")
	if err := os.WriteFile(file, []byte("kube-namesrv-system\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		env, file, want string
	}{
		{"ops", file, "ops/kube-namesrv"},
		{"", file, "kube-namesrv-system/kube-namesrv"},
		{"", filepath.Join(t.TempDir(), "missing"), "local/kube-namesrv"},
	}
	for _, tt := range tests {
		if got := defaultIdentity(tt.env, tt.file); got != tt.want {
			t.Errorf("defaultIdentity(%q, %q) = %q, want %q", tt.env, tt.file, got, tt.want)
		}
	}
}
