package refcheck

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestRepositoryReferencesResolve is the check itself: every reference to a
// file in the repository resolves.
func TestRepositoryReferencesResolve(t *testing.T) {
	problems, err := Check("../..", Options{Skip: []string{"tools/refcheck/testdata"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

func TestGoodReferencesPass(t *testing.T) {
	problems, err := Check("testdata/good", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("reported: %v", p)
	}
}

// TestDanglingReferencesFail: each kind of dangling reference in
// testdata/bad is reported with its file and line, as testdata/bad.want
// lists them (the list is a file of its own, since this file is scanned).
func TestDanglingReferencesFail(t *testing.T) {
	problems, err := Check("testdata/bad", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.File+":"+strconv.Itoa(p.Line)+" "+p.Ref)
	}
	data, err := os.ReadFile("testdata/bad.want")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSpace(string(data)), "\n")
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	// Skipped files are not scanned, but their targets still count.
	problems, err = Check("testdata/bad", Options{Skip: []string{"pkg", "README.md", "Makefile", "run", "config.yaml"}})
	if err != nil || len(problems) != 0 {
		t.Fatalf("with everything skipped: %v, %v", problems, err)
	}
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"The address server's two lists":     "the-address-servers-two-lists",
		"REGISTER_BROKER (103)":              "register_broker-103",
		"Write permission (205, 327)":        "write-permission-205-327",
		"`make test` and **cold** caches":    "make-test-and-cold-caches",
		"Differences a client can see":       "differences-a-client-can-see",
		"Topic lists and deletion (206–313)": "topic-lists-and-deletion-206313",
	} {
		if got := Slug(heading); got != want {
			t.Errorf("Slug(%q) = %q, want %q", heading, got, want)
		}
	}
}
