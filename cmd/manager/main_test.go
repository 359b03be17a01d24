package main

import (
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
