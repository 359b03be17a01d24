package kvdeclared

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// MaxFileSize bounds a declared-KV file. The operator renders it into a
// ConfigMap, which holds at most 1 MiB.
const MaxFileSize = 4 << 20

// Decode parses a declared-KV file (peerstatus.KVFile). It is strict: the
// operator and the NameServer ship in one image, so an unknown field is a
// file this NameServer would misread, not one to half-apply. It refuses
// unknown fields, trailing data, a policy other than Owned, Exclusive or
// Additive,
// empty namespace or key names, and a key both declared and removed.
func Decode(data []byte) (*peerstatus.KVFile, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("declared KV file of %d bytes, more than %d", len(data), MaxFileSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f peerstatus.KVFile
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("declared KV file is empty")
		}
		return nil, fmt.Errorf("declared KV file is not valid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("declared KV file has data after its JSON object")
	}
	switch f.Policy {
	case peerstatus.PolicyOwned, peerstatus.PolicyExclusive, peerstatus.PolicyAdditive:
	case "":
		return nil, fmt.Errorf("declared KV file has no policy (want %s, %s or %s)", peerstatus.PolicyOwned, peerstatus.PolicyExclusive, peerstatus.PolicyAdditive)
	default:
		return nil, fmt.Errorf("declared KV file has policy %q, want %s, %s or %s", f.Policy, peerstatus.PolicyOwned, peerstatus.PolicyExclusive, peerstatus.PolicyAdditive)
	}
	for ns, kv := range f.ConfigTable {
		if ns == "" {
			return nil, errors.New("declared KV file: configTable has an empty namespace name")
		}
		for k := range kv {
			if k == "" {
				return nil, fmt.Errorf("declared KV file: namespace %q has an empty key", ns)
			}
		}
	}
	for ns, keys := range f.Removed {
		if ns == "" {
			return nil, errors.New("declared KV file: removed has an empty namespace name")
		}
		for _, k := range keys {
			if k == "" {
				return nil, fmt.Errorf("declared KV file: removed keys of namespace %q include an empty one", ns)
			}
			if _, declared := f.ConfigTable[ns][k]; declared {
				return nil, fmt.Errorf("declared KV file: key %q of namespace %q is both declared and removed", k, ns)
			}
		}
	}
	return &f, nil
}
