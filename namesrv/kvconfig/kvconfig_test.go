package kvconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

var quiet = slog.New(slog.DiscardHandler)

func ptr(s string) *string { return &s }

func open(t *testing.T, path string, onChange func(ns, k, v string, present bool)) *Store {
	t.Helper()
	s, err := Open(path, Options{OnChange: onChange, Logger: quiet})
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	return s
}

func mustPut(t *testing.T, s *Store, ns, key string, value *string) {
	t.Helper()
	if err := s.Put(ns, key, value); err != nil {
		t.Fatalf("Put(%q, %q): %v", ns, key, err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// table decodes a KVTable body, failing on anything but strict JSON.
func table(t *testing.T, s *Store, ns string) map[string]string {
	t.Helper()
	body, ok := s.KVTable(ns)
	if !ok {
		t.Fatalf("KVTable(%q): namespace missing", ns)
	}
	var v struct {
		Table map[string]string `json:"table"`
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil || v.Table == nil {
		t.Fatalf("KVTable(%q) = %s: %v", ns, body, err)
	}
	return v.Table
}

func TestOpenMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "namesrv", "kvConfig.json")
	s := open(t, path, nil)
	if s.Entries() != 0 || s.Namespaces() != 0 {
		t.Fatalf("entries %d namespaces %d", s.Entries(), s.Namespaces())
	}
	if _, ok := s.Get("NS", "k"); ok {
		t.Fatal("Get found a key in an empty store")
	}
	if _, ok := s.KVTable("NS"); ok {
		t.Fatal("KVTable found a namespace in an empty store")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("Open created the file")
	}
}

func TestOpenJavaFile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "kvConfig.json"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kvConfig.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s := open(t, path, nil)
	for _, c := range []struct{ ns, key, want string }{
		{"ORDER_TOPIC_CONFIG", "TopicTest", "broker-a:4;broker-b:4"},
		{"ORDER_TOPIC_CONFIG", "TopicOrder", "broker-a:8"},
		{"SOME_NS", "url", "http://example.com/a?b=1&c=<2>"},
		{"SOME_NS", "quote", `say "hi"`},
		{"SOME_NS", "path", `C:\rocketmq\store`},
		{"SOME_NS", "multi", "line1\nline2"},
		{"SOME_NS", "empty", ""},
		{"SOME_NS", "unicode", "顺序消息 ✓ é 😀"},
	} {
		if got, ok := s.Get(c.ns, c.key); !ok || got != c.want {
			t.Errorf("Get(%s, %s) = %q, %v; want %q", c.ns, c.key, got, ok, c.want)
		}
	}
	if s.Entries() != 8 || s.Namespaces() != 3 {
		t.Fatalf("entries %d namespaces %d, want 8 and 3", s.Entries(), s.Namespaces())
	}
	if body, _ := s.KVTable("ORDER_TOPIC_CONFIG"); string(body) != `{"table":{"TopicOrder":"broker-a:8","TopicTest":"broker-a:4;broker-b:4"}}` {
		t.Fatalf("KVTable = %s", body)
	}
	if body, _ := s.KVTable("EMPTY_NS"); string(body) != `{"table":{}}` {
		t.Fatalf("empty namespace KVTable = %s", body)
	}
	if body, _ := s.KVTable("SOME_NS"); !strings.Contains(string(body), `"url":"http://example.com/a?b=1&c=<2>"`) ||
		!strings.Contains(string(body), `"unicode":"顺序消息 ✓ é 😀"`) || !strings.Contains(string(body), `"path":"C:\\rocketmq\\store"`) {
		t.Fatalf("KVTable escapes like a browser, not like fastjson: %s", body)
	}
	if readFile(t, path) != string(data) {
		t.Fatal("Open rewrote the file")
	}

	mustPut(t, s, "ORDER_TOPIC_CONFIG", "TopicNew", ptr("broker-c:2"))
	if bak := readFile(t, path+".bak"); bak != string(data) {
		t.Fatalf(".bak = %s, want the Java file", bak)
	}
	want := `{"configTable":{"EMPTY_NS":{},"ORDER_TOPIC_CONFIG":{"TopicNew":"broker-c:2","TopicOrder":"broker-a:8","TopicTest":"broker-a:4;broker-b:4"},` +
		`"SOME_NS":{"empty":"","multi":"line1\nline2","path":"C:\\rocketmq\\store","quote":"say \"hi\"","unicode":"顺序消息 ✓ é 😀","url":"http://example.com/a?b=1&c=<2>"}}}`
	if got := readFile(t, path); got != want {
		t.Fatalf("persisted\n%s\nwant\n%s", got, want)
	}
}

func TestOpenErrors(t *testing.T) {
	tests := map[string]string{
		"truncated":        `{"configTable":{"NS":{"k":"v"`,
		"not an object":    `[]`,
		"garbage":          `configTable=1`,
		"number value":     `{"configTable":{"NS":{"k":1}}}`,
		"trailing garbage": `{"configTable":{}} x`,
		"namespace list":   `{"configTable":["NS"]}`,
	}
	for name, content := range tests {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kvConfig.json")
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Open(path, Options{Logger: quiet})
			if err == nil || s != nil {
				t.Fatalf("Open accepted %q", content)
			}
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the file", err)
			}
		})
	}
	t.Run("path is a directory", func(t *testing.T) {
		path := t.TempDir()
		if _, err := Open(path, Options{Logger: quiet}); err == nil || !strings.Contains(err.Error(), path) {
			t.Fatalf("Open(directory) = %v", err)
		}
	})
}

func TestOpenLenientContent(t *testing.T) {
	tests := []struct {
		name, content string
		want          map[string]map[string]string
	}{
		{"empty file (Java's crash leftover)", "", map[string]map[string]string{}},
		{"blank file", " \n\t", map[string]map[string]string{}},
		{"null", "null", map[string]map[string]string{}},
		{"no table", "{}", map[string]map[string]string{}},
		{"null table", `{"configTable":null}`, map[string]map[string]string{}},
		{"null namespace", `{"configTable":{"NS":null,"B":{}}}`, map[string]map[string]string{"B": {}}},
		{"null value", `{"configTable":{"NS":{"k":null,"j":"v"}}}`, map[string]map[string]string{"NS": {"j": "v"}}},
		{"unknown fields", `{"dataVersion":{"counter":1},"configTable":{"NS":{"k":"v"}}}`, map[string]map[string]string{"NS": {"k": "v"}}},
		{"pretty printed", "{\n  \"configTable\" : {\n    \"NS\" : { \"k\" : \"v\\u00e9\\/\" }\n  }\n}\n", map[string]map[string]string{"NS": {"k": "vé/"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kvConfig.json")
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			s := open(t, path, nil)
			got := map[string]map[string]string{}
			for ns, nsv := range s.cur.Load().ns {
				got[ns] = nsv.kv
				if !reflect.DeepEqual(table(t, s, ns), nsv.kv) {
					t.Fatalf("KVTable(%s) disagrees with the table", ns)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("loaded %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPutGetDeleteSemantics(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kvConfig.json")
	s := open(t, path, nil)
	special := `a/b&c<d>e"f\g` + "\nh\t\u2028é世😀"

	mustPut(t, s, "NS", "k", ptr("v"))
	mustPut(t, s, "NS", "empty", ptr(""))
	mustPut(t, s, "NS", "special", ptr(special))
	mustPut(t, s, "NS", "k", ptr("v2"))
	mustPut(t, s, "NULL_NS", "k", nil)
	mustPut(t, s, "NS", "gone", ptr("x"))
	mustPut(t, s, "NS", "gone", nil)

	check := func(s *Store, when string) {
		t.Helper()
		for _, c := range []struct {
			ns, key, want string
			ok            bool
		}{
			{"NS", "k", "v2", true},
			{"NS", "empty", "", true},
			{"NS", "special", special, true},
			{"NS", "gone", "", false},
			{"NULL_NS", "k", "", false},
			{"NS", "absent", "", false},
			{"NO_NS", "k", "", false},
		} {
			if got, ok := s.Get(c.ns, c.key); got != c.want || ok != c.ok {
				t.Errorf("%s: Get(%s, %s) = %q, %v; want %q, %v", when, c.ns, c.key, got, ok, c.want, c.ok)
			}
		}
		if got := table(t, s, "NS"); !reflect.DeepEqual(got, map[string]string{"k": "v2", "empty": "", "special": special}) {
			t.Errorf("%s: KVTable(NS) = %q", when, got)
		}
		if body, ok := s.KVTable("NULL_NS"); !ok || string(body) != `{"table":{}}` {
			t.Errorf("%s: a PUT without value must create the namespace: %s, %v", when, body, ok)
		}
		if _, ok := s.KVTable("NO_NS"); ok {
			t.Errorf("%s: KVTable(NO_NS) exists", when)
		}
		if s.Entries() != 3 || s.Namespaces() != 2 {
			t.Errorf("%s: entries %d namespaces %d, want 3 and 2", when, s.Entries(), s.Namespaces())
		}
	}
	check(s, "live")
	check(open(t, path, nil), "reopened")

	body, _ := s.KVTable("NS")
	if !strings.Contains(string(body), `"a/b&c<d>e\"f\\g\nh\t\u2028é世😀"`) {
		t.Fatalf("KVTable must not escape HTML or non-ASCII: %s", body)
	}

	// DELETE of an absent key, of the last key, and in an absent namespace.
	for _, d := range [][2]string{{"NS", "absent"}, {"NULL_NS", "k"}, {"NO_NS", "k"}, {"NS", "k"}, {"NS", "empty"}, {"NS", "special"}} {
		if err := s.Delete(d[0], d[1]); err != nil {
			t.Fatalf("Delete(%s, %s): %v", d[0], d[1], err)
		}
	}
	for _, r := range []*Store{s, open(t, path, nil)} {
		if body, ok := r.KVTable("NS"); !ok || string(body) != `{"table":{}}` {
			t.Fatalf("emptied namespace = %s, %v; Java keeps it", body, ok)
		}
		if _, ok := r.KVTable("NO_NS"); ok {
			t.Fatal("Delete created a namespace")
		}
		if r.Entries() != 0 || r.Namespaces() != 2 {
			t.Fatalf("entries %d namespaces %d, want 0 and 2", r.Entries(), r.Namespaces())
		}
	}
	if got := readFile(t, path); got != `{"configTable":{"NS":{},"NULL_NS":{}}}` {
		t.Fatalf("file = %s", got)
	}
}

func TestInvalidUTF8IsStoredAsReloaded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kvConfig.json")
	s := open(t, path, nil)
	mustPut(t, s, "N\xff", "k\xfe", ptr("v\xc3"))
	for _, r := range []*Store{s, open(t, path, nil)} {
		got, ok := r.Get("N\xff", "k\xfe")
		if !ok || got != "v\uFFFD" {
			t.Fatalf("Get = %q, %v; want the value as the file keeps it", got, ok)
		}
		if got, ok := r.Get("N\uFFFD", "k\uFFFD"); !ok || got != "v\uFFFD" {
			t.Fatalf("Get(sanitized) = %q, %v", got, ok)
		}
	}
}

func TestKVTableIsCached(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "kvConfig.json"), nil)
	mustPut(t, s, OrderTopicConfigNamespace, "T", ptr("a:1"))
	mustPut(t, s, "OTHER", "k", ptr("v"))
	b1, _ := s.KVTable(OrderTopicConfigNamespace)
	b2, _ := s.KVTable(OrderTopicConfigNamespace)
	if &b1[0] != &b2[0] {
		t.Fatal("KVTable re-encoded an unchanged namespace")
	}
	mustPut(t, s, "OTHER", "k2", ptr("v"))
	if b3, _ := s.KVTable(OrderTopicConfigNamespace); &b3[0] != &b1[0] {
		t.Fatal("a change to another namespace invalidated this one")
	}
	mustPut(t, s, OrderTopicConfigNamespace, "T", ptr("a:2"))
	if b4, _ := s.KVTable(OrderTopicConfigNamespace); string(b4) != `{"table":{"T":"a:2"}}` || string(b1) != `{"table":{"T":"a:1"}}` {
		t.Fatalf("after a change KVTable = %s (old body now %s)", b4, b1)
	}
}

func TestWriteFailureRollsBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kvConfig.json")
	var calls []string
	s := open(t, path, func(ns, k, v string, present bool) {
		calls = append(calls, fmt.Sprintf("%s/%s=%s,%v", ns, k, v, present))
	})
	mustPut(t, s, "NS", "kept", ptr("1"))
	mustPut(t, s, "NS", "doomed", ptr("1"))
	calls = nil

	// The file's place is taken by a directory: rename must fail.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func() error{
		"put new key":     func() error { return s.Put("NS", "new", ptr("x")) },
		"overwrite":       func() error { return s.Put("NS", "kept", ptr("2")) },
		"put nil":         func() error { return s.Put("NS", "kept", nil) },
		"new namespace":   func() error { return s.Put("NEW_NS", "k", nil) },
		"delete":          func() error { return s.Delete("NS", "doomed") },
		"put empty value": func() error { return s.Put("NS", "x", ptr("")) },
	} {
		err := op()
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Fatalf("%s: error = %v, want one naming %s", name, err, path)
		}
	}
	if v, ok := s.Get("NS", "kept"); !ok || v != "1" {
		t.Fatalf("kept = %q, %v after failed writes", v, ok)
	}
	if _, ok := s.Get("NS", "doomed"); !ok {
		t.Fatal("a failed Delete removed the key")
	}
	if _, ok := s.Get("NS", "new"); ok {
		t.Fatal("a failed Put is visible")
	}
	if _, ok := s.KVTable("NEW_NS"); ok {
		t.Fatal("a failed Put created a namespace")
	}
	if s.Entries() != 2 || s.Namespaces() != 1 || len(calls) != 0 {
		t.Fatalf("entries %d namespaces %d calls %v after failed writes", s.Entries(), s.Namespaces(), calls)
	}
	if got := table(t, s, "NS"); !reflect.DeepEqual(got, map[string]string{"kept": "1", "doomed": "1"}) {
		t.Fatalf("KVTable after failed writes = %v", got)
	}

	// Once the disk is usable again, the next write persists exactly the
	// acknowledged state plus itself.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, "NS", "after", ptr("ok"))
	if got := readFile(t, path); got != `{"configTable":{"NS":{"after":"ok","doomed":"1","kept":"1"}}}` {
		t.Fatalf("file = %s", got)
	}
}

func TestParentDirectoriesCreated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "kvConfig.json")
	s := open(t, path, nil)
	mustPut(t, s, "NS", "k", ptr("v"))
	if got := readFile(t, path); got != `{"configTable":{"NS":{"k":"v"}}}` {
		t.Fatalf("file = %s", got)
	}
}

func TestOpenRemovesTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kvConfig.json")
	if err := os.WriteFile(path, []byte(`{"configTable":{"NS":{"k":"v"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	leftover := path + ".tmp-4711"
	if err := os.WriteFile(leftover, []byte(`{"configTable":{"NS":{"k":`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := open(t, path, nil)
	if v, _ := s.Get("NS", "k"); v != "v" {
		t.Fatalf("Get = %q", v)
	}
	if _, err := os.Stat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("leftover temporary file still there: %v", err)
	}
}

func TestOnChange(t *testing.T) {
	type call struct {
		ns, key, value string
		present        bool
		seen           string
		seenOK         bool
	}
	var calls []call
	var s *Store
	s = open(t, filepath.Join(t.TempDir(), "kvConfig.json"), func(ns, k, v string, present bool) {
		// Readers work from inside the callback and see the new state.
		seen, ok := s.Get(ns, k)
		s.KVTable(ns)
		calls = append(calls, call{ns, k, v, present, seen, ok})
	})
	mustPut(t, s, "NS", "k", ptr("v"))
	mustPut(t, s, "NS", "k", ptr("v")) // unchanged: still reported
	mustPut(t, s, "NS", "n", nil)
	if err := s.Delete("NS", "k"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("NONE", "k"); err != nil {
		t.Fatal(err)
	}
	want := []call{
		{"NS", "k", "v", true, "v", true},
		{"NS", "k", "v", true, "v", true},
		{"NS", "n", "", false, "", false},
		{"NS", "k", "", false, "", false},
		{"NONE", "k", "", false, "", false},
	}
	if !reflect.DeepEqual(calls, want) {
		t.Fatalf("calls\n%+v\nwant\n%+v", calls, want)
	}
}

func TestConcurrentPutGet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kvConfig.json")
	var mu sync.Mutex
	last := map[string]string{}
	s := open(t, path, func(ns, k, v string, present bool) {
		mu.Lock()
		defer mu.Unlock()
		last[k] = v
	})
	const writers, perWriter = 4, 6
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if body, ok := s.KVTable("NS"); ok && !json.Valid(body) {
					t.Errorf("invalid KVTable body %s", body)
					return
				}
				s.Get("NS", "w0-0")
				_ = s.Entries()
			}
		})
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				key := fmt.Sprintf("w%d-%d", w, i%3)
				if err := s.Put("NS", key, ptr(fmt.Sprint(i))); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()

	want := map[string]string{}
	for w := range writers {
		for i := 3; i < perWriter; i++ {
			want[fmt.Sprintf("w%d-%d", w, i%3)] = fmt.Sprint(i)
		}
	}
	if !reflect.DeepEqual(table(t, s, "NS"), want) {
		t.Fatalf("table = %v, want %v", table(t, s, "NS"), want)
	}
	if !reflect.DeepEqual(last, want) {
		t.Fatalf("last notified values %v, want %v (callbacks out of order?)", last, want)
	}
	if got := table(t, open(t, path, nil), "NS"); !reflect.DeepEqual(got, want) {
		t.Fatalf("reopened table = %v, want %v", got, want)
	}
}
