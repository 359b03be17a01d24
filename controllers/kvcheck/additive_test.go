package kvcheck

import (
	"testing"

	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// Additive promises "declared keys are written where they are missing". A
// declared key deleted by hand (mqadmin deleteKvConfig) leaves the peer
// unsatisfied: it is applied again, rather than left blocking rolls and
// scale-downs forever.
func TestAdditiveWritesADeletedDeclaredKeyAgain(t *testing.T) {
	v := Check("d", peerstatus.PolicyAdditive, map[int32]Peer{0: {Readable: true, KV: &peerstatus.KVStatus{Digest: "d", InSync: false,
		Drift: []peerstatus.KVDrift{{Namespace: "ORDER_TOPIC_CONFIG", Key: "T", Reason: peerstatus.DriftMissing}}}}})[0]
	if v.Blocks && !v.Apply {
		t.Errorf("verdict %+v: the peer stops serving (holds rolls and scale-downs) and nobody re-applies the declaration", v)
	}
}
