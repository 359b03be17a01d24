package controllers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-namesrv/kube-namesrv/controllers/render"
)

// A pass applies every child, and most passes change nothing: each apply
// would still be a request through every admission webhook of the API
// server. So a child is applied only when the cached object does not hold
// what the apply would set. Two checks, both needed:
//
//   - the digest of the apply configuration, kept in an annotation of the
//     child, tells whether the operator last applied this configuration:
//     a field it no longer sets (a label, a data key, an env var) stays in
//     the object, which a comparison of the fields it sets cannot see,
//     and only an apply removes it;
//   - every field the configuration sets must still hold its value in the
//     cached object: one edited by hand is set back by the apply.

// appliedDigest is the digest of an apply configuration, before the
// annotation that records it is added.
func appliedDigest(ac runtime.ApplyConfiguration) (string, error) {
	b, err := json.Marshal(ac)
	if err != nil {
		return "", fmt.Errorf("encoding the apply configuration: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16]), nil
}

// holds tells whether the existing object was last applied with the
// configuration of the given digest and still holds every field of ac.
func holds(existing client.Object, ac runtime.ApplyConfiguration, digest string) (bool, error) {
	if existing.GetAnnotations()[render.AnnotationApplied] != digest {
		return false, nil
	}
	want, err := asJSONValue(ac)
	if err != nil {
		return false, err
	}
	have, err := asJSONValue(existing)
	if err != nil {
		return false, err
	}
	w, ok := want.(map[string]any)
	h, ok2 := have.(map[string]any)
	if !ok || !ok2 {
		return false, nil
	}
	// A typed object read from the cache carries no type meta; the apply
	// configuration names its kind, which the lookup already matched.
	delete(w, "apiVersion")
	delete(w, "kind")
	return subset(w, h), nil
}

// asJSONValue is v as decoded JSON: maps, lists, strings, float64 numbers,
// booleans and nil, the same shapes for an apply configuration and the
// typed object it is compared with.
func asJSONValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding %T: %w", v, err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decoding %T: %w", v, err)
	}
	return out, nil
}

// subset tells whether have holds want: a map holds the keys of want with
// values that hold theirs, a list has the same length and holds want's
// elements in order, anything else is equal. A field want sets to its zero
// value (false, 0, "", an empty map or list, null) is held by an absent
// one: typed objects omit those when encoded.
func subset(want, have any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return have == nil && len(w) == 0
		}
		for k, wv := range w {
			hv, ok := h[k]
			if !ok {
				if !zero(wv) {
					return false
				}
				continue
			}
			if !subset(wv, hv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return have == nil && len(w) == 0
		}
		if len(w) != len(h) {
			return false
		}
		for i := range w {
			if !subset(w[i], h[i]) {
				return false
			}
		}
		return true
	case nil:
		return zero(have)
	default:
		return want == have
	}
}

// zero tells whether a decoded JSON value is the zero value of its type.
func zero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		return !v
	case float64:
		return v == 0
	case string:
		return v == ""
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}
