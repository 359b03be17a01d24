package controllers

import "testing"

func TestListNote(t *testing.T) {
	for _, tc := range []struct {
		note, ifEmpty, list, want string
	}{
		{"rest-0 serves and joined the client list", "", "10.0.0.1:9876;10.0.0.2:9876", "rest-0 serves and joined the client list: 10.0.0.1:9876;10.0.0.2:9876"},
		{"rest-0 serves and joined the client list", "", "", "rest-0 serves and joined the client list"},
		{"rest-0 left the client list", ", which is now empty", "10.0.0.2:9876", "rest-0 left the client list: 10.0.0.2:9876"},
		{"rest-0 left the client list", ", which is now empty", "", "rest-0 left the client list, which is now empty"},
	} {
		if got := listNote(tc.note, tc.ifEmpty, tc.list); got != tc.want {
			t.Errorf("listNote(%q, %q, %q) = %q, want %q", tc.note, tc.ifEmpty, tc.list, got, tc.want)
		}
	}
}
