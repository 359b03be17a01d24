package nsadmin

import (
	"reflect"
	"testing"
)

type kv struct{ k, v string }

func TestMergeRows(t *testing.T) {
	peers := []string{"a", "b", "c"}
	key := func(r kv) string { return r.k }
	same := func(x, y kv) bool { return x.v == y.v }
	tests := []struct {
		name string
		rows map[string][]kv
		want []merged[kv]
	}{
		{"everywhere alike", map[string][]kv{"a": {{"x", "1"}}, "b": {{"x", "1"}}, "c": {{"x", "1"}}},
			[]merged[kv]{{Key: "x", Value: kv{"x", "1"}, Presence: Presence{On: peers}}}},
		{"missing on one", map[string][]kv{"a": {{"x", "1"}}, "c": {{"x", "1"}}},
			[]merged[kv]{{Key: "x", Value: kv{"x", "1"}, Presence: Presence{On: []string{"a", "c"}, MissingOn: []string{"b"}}}}},
		{"two values, the wider first", map[string][]kv{"a": {{"x", "2"}}, "b": {{"x", "1"}}, "c": {{"x", "1"}}},
			[]merged[kv]{
				{Key: "x", Value: kv{"x", "1"}, Presence: Presence{On: []string{"b", "c"}, DiffersOn: []string{"a"}}},
				{Key: "x", Value: kv{"x", "2"}, Presence: Presence{On: []string{"a"}, DiffersOn: []string{"b", "c"}}},
			}},
		{"values and absence", map[string][]kv{"a": {{"x", "1"}, {"y", "1"}}, "b": {{"x", "2"}}},
			[]merged[kv]{
				{Key: "x", Value: kv{"x", "1"}, Presence: Presence{On: []string{"a"}, MissingOn: []string{"c"}, DiffersOn: []string{"b"}}},
				{Key: "x", Value: kv{"x", "2"}, Presence: Presence{On: []string{"b"}, MissingOn: []string{"c"}, DiffersOn: []string{"a"}}},
				{Key: "y", Value: kv{"y", "1"}, Presence: Presence{On: []string{"a"}, MissingOn: []string{"b", "c"}}},
			}},
		{"a row twice on one peer counts once", map[string][]kv{"a": {{"x", "1"}, {"x", "1"}}, "b": {{"x", "1"}}, "c": {{"x", "1"}}},
			[]merged[kv]{{Key: "x", Value: kv{"x", "1"}, Presence: Presence{On: peers}}}},
		{"nothing anywhere", map[string][]kv{}, nil},
	}
	for _, tt := range tests {
		got := mergeRows(peers, tt.rows, key, same)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, got, tt.want)
		}
	}
}

func TestPresenceColumn(t *testing.T) {
	for _, tt := range []struct {
		p      Presence
		want   string
		agreed bool
	}{
		{Presence{On: []string{"a", "b"}}, "2/2", true},
		{Presence{On: []string{"a"}, MissingOn: []string{"b", "c"}}, "1/3 missing on b,c", false},
		{Presence{On: []string{"a"}, DiffersOn: []string{"b"}}, "1/2 on a", false},
		{Presence{On: []string{"a"}, DiffersOn: []string{"b"}, MissingOn: []string{"c"}}, "1/3 on a; missing on c", false},
	} {
		if got := tt.p.Column(); got != tt.want || tt.p.Agreed() != tt.agreed {
			t.Errorf("%+v: %q agreed %v, want %q %v", tt.p, got, tt.p.Agreed(), tt.want, tt.agreed)
		}
	}
}
