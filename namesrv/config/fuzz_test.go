package config

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzParseProperties feeds untrusted UPDATE_NAMESRV_CONFIG bodies to the
// parser: it must never panic, and whatever it accepts must survive a
// FormatProperties/ParseProperties round trip unchanged.
func FuzzParseProperties(f *testing.F) {
	for _, seed := range []string{
		"", "a=b\n", "a:b", "a b", "# c\n! d\nk=v", "a=b\\\n  c", "a=b\\\r\n c\r\n",
		`k=\t\n\r\f\u0041\\`, `a\=b\:c\ d=e`, `a=\uD83D\uDE00`, `a=\uD83D`, `a=\u12`,
		"\\\n", "\\\n#c\na=b", "=v", "k=héllo\xff", "a=1\nb=2\na=3",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		props, err := ParseProperties(data)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, p := range props {
			if seen[p.Key] {
				t.Fatalf("duplicate key %q in %q", p.Key, props)
			}
			seen[p.Key] = true
		}
		text := FormatProperties(props)
		again, err := ParseProperties(text)
		if err != nil {
			t.Fatalf("cannot parse formatted %q: %v", text, err)
		}
		want := slices.Clone(props)
		slices.SortFunc(want, func(a, b Property) int { return strings.Compare(a.Key, b.Key) })
		if len(want) == 0 {
			want = nil
		}
		if !reflect.DeepEqual(again, want) {
			t.Fatalf("round trip of %q\nformatted %q\n got %q\nwant %q", data, text, again, want)
		}
		if text2 := FormatProperties(again); string(text2) != string(text) {
			t.Fatalf("format not stable: %q then %q", text, text2)
		}
	})
}

// FuzzFormatProperties: any properties, the operator's rendered
// spec.config or the NameServer's own, read back as written, the last value
// of a repeated key winning.
func FuzzFormatProperties(f *testing.F) {
	f.Add("a", "b", "c", "d", "a", "e")
	f.Add(" k=:#!", " v=:#!\\", "", "", "\t", "\n\r\f")
	f.Add("é😀", "\x00\x7f\xff", "\\u0041", "\\", "#", "!")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, k3, v3 string) {
		in := []Property{{k1, v1}, {k2, v2}, {k3, v3}}
		text := FormatProperties(in)
		got, err := ParseProperties(text)
		if err != nil {
			t.Fatalf("cannot parse formatted %q: %v", text, err)
		}
		last := map[string]string{}
		for _, p := range in {
			last[p.Key] = p.Value
		}
		var want []Property
		for _, k := range slices.Sorted(maps.Keys(last)) {
			want = append(want, Property{k, last[k]})
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("formatted %q\nreads back as %q\nwant %q", text, got, want)
		}
	})
}
