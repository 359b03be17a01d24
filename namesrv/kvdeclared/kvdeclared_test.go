package kvdeclared

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/kvconfig"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
	"github.com/kube-namesrv/kube-namesrv/test/logcapture"
)

type fixture struct {
	dir, kvPath, file string
	store             *kvconfig.Store
	d                 *Declared
	logs              *logcapture.Buffer

	mu      sync.Mutex
	changes []string
}

// newFixture opens a KV store holding initial and a Declared of a file in
// a kubelet-style ConfigMap directory (nothing published yet).
func newFixture(t *testing.T, initial map[string]map[string]string) *fixture {
	t.Helper()
	dir := t.TempDir()
	fx := &fixture{dir: dir, kvPath: filepath.Join(dir, "kvConfig.json"), file: filepath.Join(dir, "cm", "kv.json"), logs: &logcapture.Buffer{}}
	if err := os.Mkdir(filepath.Join(dir, "cm"), 0o755); err != nil {
		t.Fatal(err)
	}
	store, err := kvconfig.Open(fx.kvPath, kvconfig.Options{Logger: slog.New(slog.DiscardHandler),
		OnChange: func(ns, k, v string, present bool) {
			fx.mu.Lock()
			fx.changes = append(fx.changes, fmt.Sprintf("%s/%s=%s,%v", ns, k, v, present))
			fx.mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	var changes []kvconfig.Change
	for ns, kv := range initial {
		for k, v := range kv {
			changes = append(changes, kvconfig.Change{Namespace: ns, Key: k, Value: v})
		}
	}
	if _, err := store.Apply(changes); err != nil {
		t.Fatal(err)
	}
	fx.store = store
	fx.d = New(Options{Path: fx.file, Store: store, Interval: 10 * time.Millisecond, Logger: fx.logs.Logger(slog.LevelInfo)})
	t.Cleanup(fx.d.Stop)
	fx.takeChanges()
	return fx
}

func (fx *fixture) takeChanges() []string {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	c := fx.changes
	fx.changes = nil
	slices.Sort(c)
	return c
}

// publish writes the file as the kubelet updates a ConfigMap volume: a new
// timestamped directory, then an atomic swap of the ..data symlink that
// the file's own symlink points through.
func (fx *fixture) publish(t *testing.T, content string) {
	t.Helper()
	cm := filepath.Dir(fx.file)
	ts := filepath.Join(cm, fmt.Sprintf("..%d", time.Now().UnixNano()))
	if err := os.Mkdir(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ts, filepath.Base(fx.file)), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(cm, "..data_tmp")
	os.Remove(tmp)
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(cm, "..data")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(fx.file); err != nil {
		if err := os.Symlink("..data/"+filepath.Base(fx.file), fx.file); err != nil {
			t.Fatal(err)
		}
	}
}

func (fx *fixture) table() map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, ns := range []string{"NS", "OTHER", "ORDER_TOPIC_CONFIG", "HAND", "NONE"} {
		if kv, ok := fx.store.Namespace(ns); ok {
			out[ns] = kv
		}
	}
	return out
}

func encode(t *testing.T, f peerstatus.KVFile) string {
	t.Helper()
	b, err := f.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func drift(ns, key, reason string) peerstatus.KVDrift {
	return peerstatus.KVDrift{Namespace: ns, Key: key, Reason: reason}
}

func TestPolicies(t *testing.T) {
	initial := map[string]map[string]string{
		"NS":    {"same": "1", "old": "was", "hand": "mine"},
		"OTHER": {"gone": "x", "stays": "y"},
		"HAND":  {"k": "v"},
	}
	tests := []struct {
		name        string
		policy      string
		want        map[string]map[string]string
		wantChanges []string
		stats       Stats
		inSync      bool
		driftAfter  []peerstatus.KVDrift
	}{
		{
			name:   "Owned enforces values and leaves undeclared keys alone",
			policy: peerstatus.PolicyOwned,
			want: map[string]map[string]string{
				"NS":    {"same": "1", "old": "new", "hand": "mine", "added": "a"},
				"OTHER": {"stays": "y"},
				"HAND":  {"k": "v"},
			},
			wantChanges: []string{"NS/added=a,true", "NS/old=new,true", "OTHER/gone=,false"},
			stats:       Stats{Applied: 1, Written: 2, Deleted: 1},
			inSync:      true,
		},
		{
			name:   "Exclusive enforces values and deletes undeclared keys of its namespaces",
			policy: peerstatus.PolicyExclusive,
			want: map[string]map[string]string{
				"NS":    {"same": "1", "old": "new", "added": "a"},
				"OTHER": {"stays": "y"},
				"HAND":  {"k": "v"},
			},
			wantChanges: []string{"NS/added=a,true", "NS/hand=,false", "NS/old=new,true", "OTHER/gone=,false"},
			stats:       Stats{Applied: 1, Written: 2, Deleted: 2},
			inSync:      true,
		},
		{
			name:   "Additive writes absent keys only and reports the rest",
			policy: peerstatus.PolicyAdditive,
			want: map[string]map[string]string{
				"NS":    {"same": "1", "old": "was", "hand": "mine", "added": "a"},
				"OTHER": {"stays": "y"},
				"HAND":  {"k": "v"},
			},
			wantChanges: []string{"NS/added=a,true", "OTHER/gone=,false"},
			stats:       Stats{Applied: 1, Written: 1, Deleted: 1},
			inSync:      true,
			driftAfter:  []peerstatus.KVDrift{drift("NS", "old", peerstatus.DriftDiffers)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, initial)
			fx.publish(t, encode(t, peerstatus.KVFile{Policy: tt.policy,
				ConfigTable: map[string]map[string]string{"NS": {"same": "1", "old": "new", "added": "a"}},
				Removed:     map[string][]string{"OTHER": {"gone"}, "NONE": {"q"}}}))
			st := fx.d.Apply()
			if got := fx.table(); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("store %v\nwant %v", got, tt.want)
			}
			if got := fx.takeChanges(); !slices.Equal(got, tt.wantChanges) {
				t.Fatalf("OnChange %v, want %v", got, tt.wantChanges)
			}
			if got := fx.d.Stats(); got != tt.stats {
				t.Fatalf("stats %+v, want %+v", got, tt.stats)
			}
			if st.InSync != tt.inSync || st.Error != "" || st.Policy != tt.policy || !reflect.DeepEqual(st.Drift, tt.driftAfter) {
				t.Fatalf("status %+v", st)
			}
			data, _ := os.ReadFile(fx.file)
			if st.Digest != peerstatus.Digest(data) || st.File != fx.file {
				t.Fatalf("digest %s file %s", st.Digest, st.File)
			}

			// Applying again writes nothing, not even the file.
			before, err := os.Stat(fx.kvPath)
			if err != nil {
				t.Fatal(err)
			}
			fx.d.Apply()
			after, err := os.Stat(fx.kvPath)
			if err != nil || !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
				t.Fatal("an apply of an in-sync store rewrote the KV file")
			}
			if got := fx.takeChanges(); got != nil {
				t.Fatalf("an apply of an in-sync store changed %v", got)
			}
		})
	}
}

func TestDriftMadeByHandIsReportedThenCorrected(t *testing.T) {
	fx := newFixture(t, nil)
	fx.publish(t, encode(t, peerstatus.KVFile{Policy: peerstatus.PolicyExclusive,
		ConfigTable: map[string]map[string]string{"NS": {"a": "1", "b": "2"}},
		Removed:     map[string][]string{"OTHER": {"r"}}}))
	if st := fx.d.Apply(); !st.InSync {
		t.Fatalf("after the first apply %+v", st)
	}
	put := func(ns, k, v string) {
		if err := fx.store.Put(ns, k, &v); err != nil {
			t.Fatal(err)
		}
	}
	put("NS", "a", "changed")
	if err := fx.store.Delete("NS", "b"); err != nil {
		t.Fatal(err)
	}
	put("NS", "extra", "x")
	put("OTHER", "r", "back")
	put("HAND", "k", "untouched") // a namespace nobody declared
	st := fx.d.Status()
	want := []peerstatus.KVDrift{
		drift("NS", "a", peerstatus.DriftDiffers), drift("NS", "b", peerstatus.DriftMissing),
		drift("NS", "extra", peerstatus.DriftUndeclared), drift("OTHER", "r", peerstatus.DriftRemoved),
	}
	if st.InSync || !reflect.DeepEqual(st.Drift, want) {
		t.Fatalf("status %+v\nwant drift %v", st, want)
	}
	// Hand writes stay until an apply (start, file change, request).
	time.Sleep(50 * time.Millisecond)
	if v, _ := fx.store.Get("NS", "a"); v != "changed" {
		t.Fatal("drift was corrected without an apply")
	}
	if st := fx.d.Apply(); !st.InSync || st.Drift != nil {
		t.Fatalf("after the apply %+v", st)
	}
	if got := fx.table(); !reflect.DeepEqual(got, map[string]map[string]string{"NS": {"a": "1", "b": "2"}, "OTHER": {}, "HAND": {"k": "untouched"}}) {
		t.Fatalf("store %v", got)
	}
}

func TestAdditiveInSyncIgnoresDifferingValues(t *testing.T) {
	fx := newFixture(t, map[string]map[string]string{"NS": {"a": "hand"}})
	fx.publish(t, encode(t, peerstatus.KVFile{Policy: peerstatus.PolicyAdditive,
		ConfigTable: map[string]map[string]string{"NS": {"a": "declared", "b": "2"}}}))
	st := fx.d.Apply()
	if !st.InSync || !reflect.DeepEqual(st.Drift, []peerstatus.KVDrift{drift("NS", "a", peerstatus.DriftDiffers)}) {
		t.Fatalf("status %+v", st)
	}
	if err := fx.store.Delete("NS", "b"); err != nil {
		t.Fatal(err)
	}
	if st := fx.d.Status(); st.InSync {
		t.Fatalf("a missing declared key is in sync: %+v", st)
	}
}

func TestDriftIsBounded(t *testing.T) {
	fx := newFixture(t, nil)
	kv := map[string]string{}
	for i := range 3 * peerstatus.MaxListed {
		kv[fmt.Sprintf("k%03d", i)] = "v"
	}
	fx.publish(t, encode(t, peerstatus.KVFile{Policy: peerstatus.PolicyOwned, ConfigTable: map[string]map[string]string{"NS": kv}}))
	fx.d.Apply()
	for k := range kv {
		if err := fx.store.Delete("NS", k); err != nil {
			t.Fatal(err)
		}
	}
	st := fx.d.Status()
	if len(st.Drift) != peerstatus.MaxListed || st.Drift[0].Key != "k000" || st.InSync {
		t.Fatalf("drift of %d entries, first %+v", len(st.Drift), st.Drift[0])
	}
}

func TestMissingFileDeclaresNothing(t *testing.T) {
	fx := newFixture(t, map[string]map[string]string{"NS": {"k": "v"}})
	st := fx.d.Apply()
	if !st.InSync || st.Digest != "" || st.Error != "" || st.Policy != "" {
		t.Fatalf("status %+v", st)
	}
	if got := fx.table(); !reflect.DeepEqual(got, map[string]map[string]string{"NS": {"k": "v"}}) {
		t.Fatalf("store %v", got)
	}
	if s := fx.d.Stats(); s != (Stats{}) {
		t.Fatalf("stats %+v", s)
	}

	// A file that goes away leaves the store as it is.
	fx.publish(t, encode(t, peerstatus.KVFile{Policy: peerstatus.PolicyOwned, ConfigTable: map[string]map[string]string{"NS": {"k": "w"}}}))
	fx.d.Apply()
	os.Remove(fx.file)
	if st := fx.d.Apply(); !st.InSync || st.Digest != "" || st.Policy != "" {
		t.Fatalf("after removal %+v", st)
	}
	if v, _ := fx.store.Get("NS", "k"); v != "w" {
		t.Fatalf("NS/k = %q after the file went away", v)
	}
	if l := fx.logs.Lines("level=WARN", "declared KV file is gone"); len(l) != 1 {
		t.Fatalf("logs:\n%s", fx.logs.String())
	}
}

func TestCorruptFileKeepsTheLastDeclaration(t *testing.T) {
	fx := newFixture(t, nil)
	good := encode(t, peerstatus.KVFile{Policy: peerstatus.PolicyOwned, ConfigTable: map[string]map[string]string{"NS": {"k": "v"}}})
	fx.publish(t, good)
	fx.d.Apply()
	fx.d.Watch()

	fx.publish(t, `{"policy":"Owned","configTable":{"NS":{"k":"w"`)
	var st peerstatus.KVStatus
	waitFor(t, "the corrupt file to be read", func() bool { st = fx.d.Status(); return st.Error != "" })
	if st.InSync || !strings.Contains(st.Error, "not valid JSON") || st.Policy != peerstatus.PolicyOwned ||
		st.Digest != peerstatus.Digest([]byte(`{"policy":"Owned","configTable":{"NS":{"k":"w"`)) {
		t.Fatalf("status %+v", st)
	}
	if v, _ := fx.store.Get("NS", "k"); v != "v" {
		t.Fatalf("a corrupt file changed the store: %q", v)
	}
	// Reported once, however many rounds see it.
	time.Sleep(50 * time.Millisecond)
	if l := fx.logs.Lines("level=ERROR", "not applied", "not valid JSON"); len(l) != 1 {
		t.Fatalf("want one Error line, logs:\n%s", fx.logs.String())
	}
	if s := fx.d.Stats(); s.Failed != 1 || s.Applied != 1 {
		t.Fatalf("stats %+v", s)
	}
	// Hand drift is still judged against the declaration in force.
	v := "hand"
	if err := fx.store.Put("NS", "k", &v); err != nil {
		t.Fatal(err)
	}
	if st := fx.d.Status(); !reflect.DeepEqual(st.Drift, []peerstatus.KVDrift{drift("NS", "k", peerstatus.DriftDiffers)}) {
		t.Fatalf("drift %v", st.Drift)
	}

	fixed := encode(t, peerstatus.KVFile{Policy: peerstatus.PolicyOwned, ConfigTable: map[string]map[string]string{"NS": {"k": "fixed"}}})
	fx.publish(t, fixed)
	waitFor(t, "the fixed file to be applied", func() bool { v, _ := fx.store.Get("NS", "k"); return v == "fixed" })
	if st := fx.d.Status(); !st.InSync || st.Error != "" || st.Digest != peerstatus.Digest([]byte(fixed)) {
		t.Fatalf("after the fix %+v", st)
	}
}

func TestWatchFollowsSymlinkSwaps(t *testing.T) {
	fx := newFixture(t, nil)
	fx.d.Apply()
	fx.d.Watch()
	for i := range 3 {
		want := fmt.Sprintf("broker-a:%d", i+1)
		fx.publish(t, encode(t, peerstatus.KVFile{Policy: peerstatus.PolicyAdditive,
			ConfigTable: map[string]map[string]string{"ORDER_TOPIC_CONFIG": {fmt.Sprintf("T%d", i): want}}}))
		waitFor(t, "version "+want, func() bool {
			v, _ := fx.store.Get("ORDER_TOPIC_CONFIG", fmt.Sprintf("T%d", i))
			return v == want
		})
	}
	// The store shows an apply's writes before its counters are bumped.
	waitFor(t, "three applies counted", func() bool { s := fx.d.Stats(); return s.Applied == 3 && s.Written == 3 })
	fx.d.Stop()
	fx.d.Stop() // twice is fine
}

func TestApplyFailureIsReported(t *testing.T) {
	fx := newFixture(t, nil)
	fx.publish(t, encode(t, peerstatus.KVFile{Policy: peerstatus.PolicyOwned, ConfigTable: map[string]map[string]string{"NS": {"k": "v"}}}))
	// The KV file's place is taken by a directory: the write must fail.
	os.Remove(fx.kvPath)
	if err := os.Mkdir(fx.kvPath, 0o755); err != nil {
		t.Fatal(err)
	}
	st := fx.d.Apply()
	if st.InSync || !strings.Contains(st.Error, "apply declared KV config") || st.Drift[0] != drift("NS", "k", peerstatus.DriftMissing) {
		t.Fatalf("status %+v", st)
	}
	if s := fx.d.Stats(); s.Failed != 1 || s.Applied != 0 {
		t.Fatalf("stats %+v", s)
	}
	os.Remove(fx.kvPath)
	if st := fx.d.Apply(); !st.InSync || st.Error != "" {
		t.Fatalf("after the disk recovered %+v", st)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
