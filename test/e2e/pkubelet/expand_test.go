package pkubelet

import "testing"

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "alpha", "B": "$(A)", "EMPTY": ""}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"$(A)", "alpha"},
		{"x-$(A)-y", "x-alpha-y"},
		{"$(A)$(A)", "alphaalpha"},
		{"$(B)", "$(A)"}, // values are not expanded again
		{"$(EMPTY)|", "|"},
		{"$(UNDEFINED)", "$(UNDEFINED)"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$alpha"},
		{"$$", "$"},
		{"$(A", "$(A"},
		{"$", "$"},
		{"a$b", "a$b"},
		{"$()", "$()"},
	} {
		if got := expand(tc.in, lookup); got != tc.want {
			t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestExpandRewrite(t *testing.T) {
	mounts := newMountTable([]mount{{path: "/data", hostPath: "/host/pvc"}, {path: "/tmp", hostPath: "/host/tmp"}})
	vars := map[string]string{"DIR": "/srv", "HOSTDIR": "/tmp/x", "IP": "10.244.0.2"}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	for _, tc := range []struct{ in, want string }{
		{"--data-dir=/data", "--data-dir=/host/pvc"},
		{"/data/sub", "/host/pvc/sub"},
		{"$(DIR)/data", "/srv/data"}, // literal next to a reference is mid-path
		{"$(HOSTDIR)", "/tmp/x"},     // substituted values are never rewritten
		{"/data:$(IP)", "/host/pvc:10.244.0.2"},
		{"/data$(IP)", "/data10.244.0.2"},   // ambiguous: left alone
		{"$$(DIR)/data", "$(DIR)/host/pvc"}, // escaped: literal "$(DIR)", then "/data" after ')' is a boundary
	} {
		if got := expandRewrite(tc.in, lookup, mounts); got != tc.want {
			t.Errorf("expandRewrite(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
