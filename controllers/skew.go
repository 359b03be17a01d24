package controllers

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

// A CRD older than the operator (Helm installs a chart's crds/ once and never
// upgrades them) lacks fields the operator writes to status. The API server
// prunes what its schema does not know without an error, so the operator
// would silently lose them: status.peers of an old enough CRD, and with it
// which peers are published. Every status write is therefore checked
// against what the API server returned; what it dropped is reported as a
// refusal (Degraded, reason CRDOutdated, and a Warning event) from the next
// pass on, until a write keeps everything.

// maxDroppedListed bounds the fields named in the message.
const maxDroppedListed = 5

// schemaGaps remembers, per cluster, the status fields the API server
// dropped from the latest status write.
type schemaGaps struct {
	mu      sync.Mutex
	dropped map[types.UID][]string
}

// record keeps what the latest write of a cluster's status lost.
func (g *schemaGaps) record(uid types.UID, dropped []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(dropped) == 0 {
		delete(g.dropped, uid)
		return
	}
	if g.dropped == nil {
		g.dropped = map[types.UID][]string{}
	}
	g.dropped[uid] = dropped
}

// problems are the refusals to report for a cluster: one when its latest
// status write lost fields.
func (g *schemaGaps) problems(c *v1alpha1.NameServerCluster) []problem {
	g.mu.Lock()
	dropped := g.dropped[c.UID]
	g.mu.Unlock()
	if len(dropped) == 0 {
		return nil
	}
	shown := dropped[:min(len(dropped), maxDroppedListed)]
	more := ""
	if n := len(dropped) - len(shown); n > 0 {
		more = fmt.Sprintf(" and %d more", n)
	}
	return []problem{{Reason: v1alpha1.RefusalCRDOutdated, Retry: true, Message: fmt.Sprintf(
		"the installed NameServerCluster CRD is older than the operator: the API server dropped %s%s from the status it wrote, "+
			"because the CRD's schema lacks them; apply the CRD of the operator's release (Helm never upgrades the CRDs of a chart's crds/ directory)",
		strings.Join(shown, ", "), more)}}
}

// droppedFields are the paths of the fields of sent that got lacks: what
// the API server pruned. Both are compared as JSON, list items by index.
func droppedFields(sent, got any) ([]string, error) {
	var s, g any
	for _, x := range []struct {
		in  any
		out *any
	}{{sent, &s}, {got, &g}} {
		b, err := json.Marshal(x.in)
		if err != nil {
			return nil, fmt.Errorf("encoding a status to compare: %w", err)
		}
		if err := json.Unmarshal(b, x.out); err != nil {
			return nil, fmt.Errorf("decoding a status to compare: %w", err)
		}
	}
	var out []string
	walkDropped("status", s, g, &out)
	slices.Sort(out)
	return slices.Compact(out), nil
}

// walkDropped adds to out the paths under path present in s and absent in
// g. Items of a list are named by [] rather than their index: a field the
// schema lacks is missing from every item.
func walkDropped(path string, s, g any, out *[]string) {
	switch sv := s.(type) {
	case map[string]any:
		gv, ok := g.(map[string]any)
		if !ok {
			return
		}
		for _, k := range slices.Sorted(maps.Keys(sv)) {
			child, present := gv[k]
			if !present {
				*out = append(*out, path+"."+k)
				continue
			}
			walkDropped(path+"."+k, sv[k], child, out)
		}
	case []any:
		gv, ok := g.([]any)
		if !ok {
			return
		}
		for i := range min(len(sv), len(gv)) {
			walkDropped(path+"[]", sv[i], gv[i], out)
		}
	}
}
