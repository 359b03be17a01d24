package kvconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestApplyBatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kvConfig.json")
	var calls []string
	s := open(t, path, func(ns, k, v string, present bool) {
		calls = append(calls, fmt.Sprintf("%s/%s=%s,%v", ns, k, v, present))
	})
	mustPut(t, s, "A", "same", ptr("1"))
	mustPut(t, s, "A", "old", ptr("1"))
	mustPut(t, s, "A", "hand", ptr("mine"))
	mustPut(t, s, "EMPTY", "gone", ptr("x"))
	calls = nil

	applied, err := s.Apply([]Change{
		{Namespace: "A", Key: "same", Value: "1"},                         // unchanged: skipped
		{Namespace: "A", Key: "old", Value: "2"},                          // overwritten
		{Namespace: "A", Key: "hand", Value: "theirs", Op: OpSetIfAbsent}, // present: skipped
		{Namespace: "A", Key: "new", Value: "n", Op: OpSetIfAbsent},       // absent: written
		{Namespace: "B", Key: "k", Value: "v"},                            // new namespace
		{Namespace: "EMPTY", Key: "gone", Op: OpDelete},                   // namespace kept, empty
		{Namespace: "NONE", Key: "k", Op: OpDelete},                       // absent namespace: skipped
		{Namespace: "A", Key: "nothing", Op: OpDelete},                    // absent key: skipped
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{
		{Namespace: "A", Key: "old", Value: "2"},
		{Namespace: "A", Key: "new", Value: "n", Op: OpSetIfAbsent},
		{Namespace: "B", Key: "k", Value: "v"},
		{Namespace: "EMPTY", Key: "gone", Op: OpDelete},
	}
	if !reflect.DeepEqual(applied, want) {
		t.Fatalf("applied %+v\nwant %+v", applied, want)
	}
	if want := []string{"A/old=2,true", "A/new=n,true", "B/k=v,true", "EMPTY/gone=,false"}; !reflect.DeepEqual(calls, want) {
		t.Fatalf("OnChange calls %v, want %v", calls, want)
	}
	wantFile := `{"configTable":{"A":{"hand":"mine","new":"n","old":"2","same":"1"},"B":{"k":"v"},"EMPTY":{}}}`
	if got := readFile(t, path); got != wantFile {
		t.Fatalf("file %s", got)
	}
	if s.Entries() != 5 || s.Namespaces() != 3 {
		t.Fatalf("entries %d namespaces %d", s.Entries(), s.Namespaces())
	}
	if got := table(t, s, "A"); got["old"] != "2" || got["new"] != "n" {
		t.Fatalf("KVTable(A) = %v", got)
	}
	if ns, ok := s.Namespace("A"); !ok || len(ns) != 4 {
		t.Fatalf("Namespace(A) = %v, %v", ns, ok)
	} else {
		ns["old"] = "changed by the caller"
		if v, _ := s.Get("A", "old"); v != "2" {
			t.Fatal("Namespace returned the store's own map")
		}
	}
	if _, ok := s.Namespace("NONE"); ok {
		t.Fatal("Namespace found a namespace that does not exist")
	}

	// A batch that alters nothing does not touch the file.
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(path + ".bak")
	calls = nil
	applied, err = s.Apply([]Change{{Namespace: "A", Key: "old", Value: "2"}, {Namespace: "A", Key: "x", Op: OpDelete}})
	if err != nil || applied != nil || calls != nil {
		t.Fatalf("no-op batch: applied %v, err %v, calls %v", applied, err, calls)
	}
	if fi2, err := os.Stat(path); err != nil || !os.SameFile(fi, fi2) || !fi2.ModTime().Equal(fi.ModTime()) {
		t.Fatal("a batch that alters nothing rewrote the file")
	}
	if _, err := os.Stat(path + ".bak"); err == nil {
		t.Fatal("a batch that alters nothing made a backup")
	}
}

func TestApplyFailureChangesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kvConfig.json")
	calls := 0
	s := open(t, path, func(string, string, string, bool) { calls++ })
	mustPut(t, s, "A", "k", ptr("1"))
	calls = 0
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := s.Apply([]Change{{Namespace: "A", Key: "k", Value: "2"}, {Namespace: "B", Key: "k", Value: "v"}})
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v, want one naming %s", err, path)
	}
	if v, _ := s.Get("A", "k"); v != "1" || s.Namespaces() != 1 || calls != 0 {
		t.Fatalf("a failed batch left traces: A/k=%q namespaces %d calls %d", v, s.Namespaces(), calls)
	}
}
