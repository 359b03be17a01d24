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
