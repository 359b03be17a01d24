package kvcheck_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/kvcheck"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
	"github.com/kube-namesrv/kube-namesrv/namesrv/kvconfig"
	"github.com/kube-namesrv/kube-namesrv/namesrv/kvdeclared"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// TestVerdictOnARealNameServerReport judges what the NameServer's own
// declared-KV code reports, so the operator and the NameServer cannot drift
// apart on what a policy means: the spec is rendered as the operator renders
// it, applied as a peer applies it, changed by hand as mqadmin would, and the
// peer's status judged; when the verdict says to apply the declaration
// again, the peer's own apply must satisfy it.
func TestVerdictOnARealNameServerReport(t *testing.T) {
	const ns, key = "ORDER_TOPIC_CONFIG", "TopicA"
	hand := "broker-a:2"
	tests := []struct {
		name   string
		policy v1alpha1.KVConfigPolicy
		byHand func(*kvconfig.Store) error
		want   kvcheck.Verdict
		// keepsHandKey: the key made by hand stays, whatever is applied.
		keepsHandKey bool
	}{
		{name: "Owned, untouched", policy: v1alpha1.KVConfigOwned, byHand: func(*kvconfig.Store) error { return nil },
			want: kvcheck.Verdict{Known: true, Delivered: true, InSync: true, Satisfied: true}},
		{name: "Owned, value changed by hand: set back, no clients meanwhile", policy: v1alpha1.KVConfigOwned,
			byHand: func(s *kvconfig.Store) error { return s.Put(ns, key, &hand) },
			want:   kvcheck.Verdict{Known: true, Delivered: true, Apply: true, Blocks: true}},
		{name: "Additive, value changed by hand: reported, tolerated", policy: v1alpha1.KVConfigAdditive,
			byHand: func(s *kvconfig.Store) error { return s.Put(ns, key, &hand) },
			want:   kvcheck.Verdict{Known: true, Delivered: true, Satisfied: true}},
		{name: "Additive, declared key deleted by hand: written again, no clients meanwhile", policy: v1alpha1.KVConfigAdditive,
			byHand: func(s *kvconfig.Store) error { return s.Delete(ns, key) },
			want:   kvcheck.Verdict{Known: true, Delivered: true, Apply: true, Blocks: true}},
		{name: "Owned, declared key deleted by hand: written again", policy: v1alpha1.KVConfigOwned,
			byHand: func(s *kvconfig.Store) error { return s.Delete(ns, key) },
			want:   kvcheck.Verdict{Known: true, Delivered: true, Apply: true, Blocks: true}},
		{name: "Owned, a key made by hand beside the declared one: left alone", policy: v1alpha1.KVConfigOwned,
			byHand: func(s *kvconfig.Store) error { return s.Put(ns, "TopicByHand", &hand) },
			want:   kvcheck.Verdict{Known: true, Delivered: true, InSync: true, Satisfied: true}, keepsHandKey: true},
		{name: "Exclusive, a key made by hand beside the declared one: deleted", policy: v1alpha1.KVConfigExclusive,
			byHand: func(s *kvconfig.Store) error { return s.Put(ns, "TopicByHand", &hand) },
			want:   kvcheck.Verdict{Known: true, Delivered: true, Apply: true, Blocks: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &v1alpha1.NameServerCluster{Spec: v1alpha1.NameServerClusterSpec{KVConfigPolicy: tt.policy,
				KVConfig: []v1alpha1.KVConfigEntry{{Namespace: ns, Key: key, Value: "broker-a:4"}}}}
			file, err := render.KVFile(c)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "kv.json")
			if err := os.WriteFile(path, file, 0o600); err != nil {
				t.Fatal(err)
			}
			store, err := kvconfig.Open(filepath.Join(dir, "kvConfig.json"), kvconfig.Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			d := kvdeclared.New(kvdeclared.Options{Path: path, Store: store})
			if st := d.Apply(); !st.InSync {
				t.Fatalf("after the apply: %+v", st)
			}
			if err := tt.byHand(store); err != nil {
				t.Fatal(err)
			}
			st := d.Status()
			got := kvcheck.Check(peerstatus.Digest(file), string(tt.policy), map[int32]kvcheck.Peer{0: {Readable: true, KV: &st}})[0]
			got.Drift = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("peer reported %+v, verdict %+v, want %+v", st, got, tt.want)
			}
			if tt.keepsHandKey {
				d.Apply()
				if _, there := store.Get(ns, "TopicByHand"); !there {
					t.Errorf("an apply under %s deleted a key made by hand that the spec never declared", tt.policy)
				}
			}
			if !got.Apply {
				return
			}
			st = d.Apply()
			if after := kvcheck.Check(peerstatus.Digest(file), string(tt.policy), map[int32]kvcheck.Peer{0: {Readable: true, KV: &st}})[0]; !after.Satisfied || after.Blocks {
				t.Errorf("after the peer applied its declaration again it reports %+v, verdict %+v", st, after)
			}
			if _, there := store.Get(ns, "TopicByHand"); there && tt.policy == v1alpha1.KVConfigExclusive {
				t.Errorf("a key made by hand beside the declared one survived an apply under %s", tt.policy)
			}
		})
	}
}
