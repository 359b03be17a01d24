package render

import (
	"encoding/json"
	"fmt"
	"maps"
)

// convert copies a typed API struct (as users wrote it in the spec) into the
// matching apply configuration. Both share one JSON shape, and going through
// JSON keeps exactly the fields the user set: zero values the API server
// dropped on the way in stay absent, so the operator claims no field it does
// not mean.
func convert(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encoding %T: %w", in, err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("decoding %T into %T: %w", in, out, err)
	}
	return nil
}

// overlay writes into out the operator's defaults with every top-level field
// the user set replacing the default one: the "field by field" override of
// the security contexts.
func overlay(defaults, user, out any) error {
	merged := map[string]any{}
	for _, v := range []any{defaults, user} {
		var m map[string]any
		if err := convert(v, &m); err != nil {
			return err
		}
		maps.Copy(merged, m)
	}
	return convert(merged, out)
}
