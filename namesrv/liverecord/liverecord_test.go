package liverecord

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

func key(addr string) peerstatus.BrokerKey { return peerstatus.BrokerKey{Cluster: "c", Addr: addr} }

func TestDecode(t *testing.T) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC)
	tests := []struct {
		name, in string
		want     []peerstatus.BrokerKey
		err      string
	}{
		{"brokers", `{"recordedAt":"2025-03-04T05:06:07.000000008Z","brokers":[{"cluster":"c","addr":"b:1"},{"cluster":"c","addr":"a:1"},{"cluster":"c","addr":"b:1"}]}`,
			[]peerstatus.BrokerKey{key("a:1"), key("b:1")}, ""},
		{"known empty", `{"recordedAt":"2025-03-04T05:06:07.000000008Z","brokers":[]}`, []peerstatus.BrokerKey{}, ""},
		{"null brokers", `{"recordedAt":"2025-03-04T05:06:07.000000008Z","brokers":null}` + "\n", []peerstatus.BrokerKey{}, ""},
		{"unknown field of a later version", `{"recordedAt":"2025-03-04T05:06:07.000000008Z","brokers":[],"next":1}`, []peerstatus.BrokerKey{}, ""},
		{"empty", "", nil, "empty record"},
		{"blank", " \n", nil, "empty record"},
		{"torn", `{"recordedAt":"2025-03-04T05:06:07Z","brokers":[{"clu`, nil, "not valid JSON"},
		{"not an object", `[]`, nil, "not valid JSON"},
		{"trailing data", `{"recordedAt":"2025-03-04T05:06:07Z","brokers":[]} {}`, nil, "data after"},
		{"no time", `{"brokers":[]}`, nil, "without recordedAt"},
		{"bad time", `{"recordedAt":"yesterday","brokers":[]}`, nil, "not valid JSON"},
		{"broker without address", `{"recordedAt":"2025-03-04T05:06:07Z","brokers":[{"cluster":"c"}]}`, nil, "brokers[0] needs both"},
		{"too large", strings.Repeat(" ", MaxFileSize+1), nil, "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := Decode([]byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !rec.RecordedAt.Equal(at) || rec.Brokers == nil || !slices.Equal(rec.Brokers, tt.want) {
				t.Fatalf("record %+v", rec)
			}
		})
	}
}

// FuzzDecode: the decoder never panics, and what it accepts names only
// complete brokers and survives a round trip unchanged.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"recordedAt":"2025-03-04T05:06:07Z","brokers":[{"cluster":"c","addr":"10.0.0.1:10911"}]}`))
	f.Add([]byte(`{"recordedAt":"2025-03-04T05:06:07.123+02:00","brokers":[]}`))
	f.Add([]byte(`{"recordedAt":"2025-03-04T05:06:07Z","brokers":null,"x":{}}`))
	f.Add([]byte(`{"recordedAt":"0001-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"recordedAt":"2025-03-04T05:06:07Z","brokers":[{"cluster":"\u00e9","addr":"\ud800"},{"cluster":"\u00e9","addr":"\ud800"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := Decode(data)
		if err != nil {
			return
		}
		if rec.RecordedAt.IsZero() || rec.Brokers == nil {
			t.Fatalf("accepted %+v", rec)
		}
		for _, k := range rec.Brokers {
			if k.Cluster == "" || k.Addr == "" {
				t.Fatalf("accepted an incomplete broker %+v", k)
			}
		}
		enc, err := Encode(rec)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Decode(enc)
		if err != nil || !again.RecordedAt.Equal(rec.RecordedAt) || !slices.Equal(again.Brokers, rec.Brokers) {
			t.Fatalf("round trip of %s: %+v, %v", enc, again, err)
		}
	})
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	if rec, err := Load(filepath.Join(dir, "none.json")); rec != nil || err != nil {
		t.Fatalf("missing file: %+v, %v", rec, err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"recordedAt":`), 0o644); err != nil {
		t.Fatal(err)
	}
	if rec, err := Load(bad); rec != nil || err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("corrupt file: %+v, %v", rec, err)
	}
	if rec, err := Load(dir); rec != nil || err == nil {
		t.Fatalf("a directory: %+v, %v", rec, err)
	}
	good := filepath.Join(dir, "good.json")
	data, err := Encode(peerstatus.GateRecord{RecordedAt: time.Unix(1700000000, 0), Brokers: []peerstatus.BrokerKey{key("b:1"), key("a:1")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(good, data, 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := Load(good)
	if err != nil || rec == nil || !slices.Equal(rec.Brokers, []peerstatus.BrokerKey{key("a:1"), key("b:1")}) || rec.RecordedAt.Unix() != 1700000000 {
		t.Fatalf("good file: %+v, %v", rec, err)
	}
}

func TestPath(t *testing.T) {
	if p := Path("", "/data/kvConfig.json"); p != "/data/liveBrokers.json" {
		t.Fatalf("default %q", p)
	}
	if p := Path("/elsewhere/live.json", "/data/kvConfig.json"); p != "/elsewhere/live.json" {
		t.Fatalf("set %q", p)
	}
}

// fakeTable is the live set and the completeness a recorder reads.
type fakeTable struct {
	mu       sync.Mutex
	live     []peerstatus.BrokerKey
	complete atomic.Bool
}

func (f *fakeTable) set(keys ...peerstatus.BrokerKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.live = keys
}

func (f *fakeTable) get() []peerstatus.BrokerKey {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.live)
}

const interval = 5 * time.Second

func newRecorder(path string, tb *fakeTable, prev *peerstatus.GateRecord) *Recorder {
	return New(Options{Path: path, Live: tb.get, Complete: tb.complete.Load, Previous: prev, Interval: interval})
}

func load(t *testing.T, path string) *peerstatus.GateRecord {
	t.Helper()
	rec, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestRecorderWaitsForACompleteTable: a restarted NameServer's table is
// filling; writing it would overwrite the previous record with a part of
// it, so nothing is written, not even at shutdown, until it is complete.
func TestRecorderWaitsForACompleteTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	prev := []byte(`{"recordedAt":"2025-03-04T05:06:07Z","brokers":[{"cluster":"c","addr":"a:1"},{"cluster":"c","addr":"b:1"}]}` + "\n")
	if err := os.WriteFile(path, prev, 0o644); err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		tb := &fakeTable{}
		tb.set(key("a:1"))
		r := newRecorder(path, tb, load(t, path))
		r.Run()
		time.Sleep(10 * interval)
		synctest.Wait()
		r.Stop()
		if got, _ := os.ReadFile(path); string(got) != string(prev) || r.Stats() != (Stats{Checks: 11}) {
			t.Fatalf("record rewritten before the table was complete: %s, %+v", got, r.Stats())
		}
	})
}

func TestRecorderWritesChangesAtMostOncePerInterval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", FileName)
	synctest.Test(t, func(t *testing.T) {
		tb := &fakeTable{}
		tb.complete.Store(true)
		tb.set(key("b:1"), key("a:1"))
		r := newRecorder(path, tb, nil)
		start := time.Now()
		r.Run()
		defer r.Stop()
		time.Sleep(interval)
		synctest.Wait()
		rec := load(t, path)
		if rec == nil || !slices.Equal(rec.Brokers, []peerstatus.BrokerKey{key("a:1"), key("b:1")}) || !rec.RecordedAt.Equal(start.Add(interval)) {
			t.Fatalf("first record %+v", rec)
		}
		// A storm of changes within one interval: one write, of the set at
		// its end.
		for i := range 100 {
			if i%2 == 0 {
				tb.set(key("a:1"))
			} else {
				tb.set(key("a:1"), key("b:1"), key("c:1"))
			}
			time.Sleep(interval / 200)
		}
		time.Sleep(interval / 2)
		synctest.Wait()
		if st := r.Stats(); st.Written != 2 || st.Failed != 0 {
			t.Fatalf("%+v after a storm of changes within one interval, want 2 writes", st)
		}
		if rec := load(t, path); !slices.Equal(rec.Brokers, []peerstatus.BrokerKey{key("a:1"), key("b:1"), key("c:1")}) {
			t.Fatalf("record after the storm %+v", rec)
		}
		// Unchanged: nothing written, however long.
		time.Sleep(20 * interval)
		synctest.Wait()
		if st := r.Stats(); st.Written != 2 || st.Failed != 0 {
			t.Fatalf("%+v with the set unchanged", st)
		}
		// No broker left: recorded as known empty.
		tb.set()
		time.Sleep(interval)
		synctest.Wait()
		if rec := load(t, path); rec == nil || rec.Brokers == nil || len(rec.Brokers) != 0 {
			t.Fatalf("empty set recorded as %+v", rec)
		}
		if data, _ := os.ReadFile(path); !strings.Contains(string(data), `"brokers":[]`) {
			t.Fatalf("empty record %s", data)
		}
	})
}

// TestRecorderSkipsThePreviousSetAndWritesAtStop: a set equal to the
// loaded record is not written again; a clean stop writes once more so
// recordedAt says when the brokers were last seen together.
func TestRecorderSkipsThePreviousSetAndWritesAtStop(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	synctest.Test(t, func(t *testing.T) {
		prev := &peerstatus.GateRecord{RecordedAt: time.Now().Add(-time.Hour), Brokers: []peerstatus.BrokerKey{key("a:1")}}
		data, _ := Encode(*prev)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		tb := &fakeTable{}
		tb.complete.Store(true)
		tb.set(key("a:1"))
		r := newRecorder(path, tb, prev)
		r.Run()
		time.Sleep(3 * interval)
		synctest.Wait()
		if st := r.Stats(); st.Written != 0 {
			t.Fatalf("the previous set was written again: %+v", st)
		}
		time.Sleep(interval / 3)
		r.Stop()
		rec := load(t, path)
		if st := r.Stats(); st.Written != 1 || !rec.RecordedAt.Equal(time.Now()) || !slices.Equal(rec.Brokers, prev.Brokers) {
			t.Fatalf("after stop: %+v, %+v", st, rec)
		}
		r.Stop()
		if st := r.Stats(); st.Written != 1 {
			t.Fatalf("a second Stop wrote again: %+v", st)
		}
	})
}

func TestRecorderThatNeverRanWritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	tb := &fakeTable{}
	tb.complete.Store(true)
	r := newRecorder(path, tb, nil)
	r.Stop()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a recorder stopped before it ran wrote: %v", err)
	}
}

// TestRecorderRetriesAFailedWrite: a write that fails is counted and
// logged, and the next check tries again.
func TestRecorderRetriesAFailedWrite(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "sub")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil { // a file where the record's directory must be
		t.Fatal(err)
	}
	path := filepath.Join(blocker, FileName)
	synctest.Test(t, func(t *testing.T) {
		tb := &fakeTable{}
		tb.complete.Store(true)
		tb.set(key("a:1"))
		r := newRecorder(path, tb, nil)
		r.Run()
		defer r.Stop()
		time.Sleep(interval)
		synctest.Wait()
		if st := r.Stats(); st.Failed != 1 || st.Written != 0 {
			t.Fatalf("stats %+v", st)
		}
		os.Remove(blocker)
		time.Sleep(interval)
		synctest.Wait()
		if st := r.Stats(); st.Failed != 1 || st.Written != 1 || load(t, path) == nil {
			t.Fatalf("after the retry %+v", st)
		}
	})
}

func TestNewRemovesTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	tmp := filepath.Join(dir, FileName+".tmp-123")
	if err := os.WriteFile(tmp, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	New(Options{Path: path, Live: func() []peerstatus.BrokerKey { return nil }, Complete: func() bool { return false }})
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("temporary file left: %v", err)
	}
}
