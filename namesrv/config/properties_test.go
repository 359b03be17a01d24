package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func props(kv ...string) []Property {
	var out []Property
	for i := 0; i < len(kv); i += 2 {
		out = append(out, Property{Key: kv[i], Value: kv[i+1]})
	}
	return out
}

// The expectations below were checked against java.util.Properties.load of
// OpenJDK 17 (raw non-ASCII bytes aside, which Java reads as ISO-8859-1).
func TestParseProperties(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Property
	}{
		{"empty", "", nil},
		{"blank lines only", "\n \n\t\f\r\n", nil},
		{"equals", "a=b\n", props("a", "b")},
		{"colon", "a:b", props("a", "b")},
		{"space separator", "a b", props("a", "b")},
		{"tab separator", "a\tb", props("a", "b")},
		{"form feed separator", "a\fb", props("a", "b")},
		{"spaces around equals", "a   =   b", props("a", "b")},
		{"second separator belongs to value", "a = = b", props("a", "= b")},
		{"colon then equals", "a:=b", props("a", "=b")},
		{"whitespace then colon", "a \t: b", props("a", "b")},
		{"value keeps trailing spaces", "a=b  \n", props("a", "b  ")},
		{"key only", "a", props("a", "")},
		{"key and separator only", "a=", props("a", "")},
		{"empty key", "=v", props("", "v")},
		{"leading whitespace skipped", "   \t\fa=b", props("a", "b")},
		{"hash comment", "# a=b\nc=d", props("c", "d")},
		{"bang comment", "! a=b\nc=d", props("c", "d")},
		{"indented comment", "   # a=b\nc=d", props("c", "d")},
		{"comment at EOF without newline", "a=b\n#c", props("a", "b")},
		{"comment ending in backslash does not continue", "#x\\\na=b", props("a", "b")},
		{"hash inside value", "a=b#c", props("a", "b#c")},
		{"continuation", "a=b\\\n   c", props("a", "bc")},
		{"continuation CRLF", "a=b\\\r\n c\r\nd=e\r\n", props("a", "bc", "d", "e")},
		{"continuation CR", "a=b\\\r c\rd=e", props("a", "bc", "d", "e")},
		{"continuation in key", "a\\\n  b=c", props("ab", "c")},
		{"hash on continued line is data", "a=b\\\n#c", props("a", "b#c")},
		{"blank line ends continuation", "a=b\\\n\nc=d", props("a", "b", "c", "d")},
		{"whitespace line ends continuation", "a=b\\\n   \nc=d", props("a", "b", "c", "d")},
		{"comment right after a bare continuation", "\\\n#c\na=b", props("a", "b")},
		{"even backslashes do not continue", "a=b\\\\\nc=d", props("a", "b\\", "c", "d")},
		{"backslash at EOF dropped", "a=b\\", props("a", "b")},
		{"continuation cut by EOF still ends a line", "\\\n", props("", "")},
		{"continuation over CRLF at EOF ends nothing", "\\\r\n", nil},
		{"escapes", `a=\t\n\r\f\u0041\z\\\=\:\ \#`, props("a", "\t\n\r\fAz\\=: #")},
		{"escaped separators in key", `a\=b\:c\ d\	e=f`, props("a=b:c d\te", "f")},
		{"escaped leading space in value", `a=\  b`, props("a", "  b")},
		{"unicode escapes lower and upper hex", `a=\u00e9\u00C9`, props("a", "éÉ")},
		{"surrogate pair", `a=\uD83D\uDE00`, props("a", "😀")},
		{"lone high surrogate", `a=\uD83Dx`, props("a", "\uFFFDx")},
		{"lone low surrogate", `a=\uDE00`, props("a", "\uFFFD")},
		{"high surrogate at end", `a=\uD83D`, props("a", "\uFFFD")},
		{"two high surrogates", `a=\uD83D\uD83D\uDE00`, props("a", "\uFFFD😀")},
		{"raw UTF-8 kept", "k=héllo 世界", props("k", "héllo 世界")},
		{"invalid UTF-8 kept", "k=\xff\xfe", props("k", "\xff\xfe")},
		{"duplicate keys: last value, first position", "a=1\nb=2\na=3", props("a", "3", "b", "2")},
		{"NUL byte is data", "a=\x00", props("a", "\x00")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseProperties([]byte(tt.in))
			if err != nil {
				t.Fatalf("ParseProperties(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseProperties(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestParsePropertiesMalformedUnicode(t *testing.T) {
	tests := []struct {
		name string
		in   string
		line int
	}{
		{"short value escape", `a=\u12`, 1},
		{"non-hex digit", "x=1\ny=\\u12G4", 2},
		{"in key", "\n\n\\uZZZZ=1", 3},
		{"after blank lines and comments", "x=1\ny=2\n\n# c\nz=\\u1", 5},
		{"CRLF counted once", "x=1\r\ny=2\r\nz=\\u", 3},
		{"CR only", "x=1\ry=\\u", 2},
		{"continued line reports its first line", "x=1\na=1\\\n  \\u12", 2},
		{"escape cut by the separator", `\u00=1`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseProperties([]byte(tt.in))
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("ParseProperties(%q) error = %v, want *SyntaxError", tt.in, err)
			}
			if se.Line != tt.line {
				t.Fatalf("line = %d, want %d (%v)", se.Line, tt.line, err)
			}
			if !strings.Contains(err.Error(), "malformed \\uxxxx encoding") {
				t.Fatalf("error %q does not say what is wrong", err)
			}
		})
	}
}

func TestFormatProperties(t *testing.T) {
	tests := []struct {
		name string
		in   []Property
		want string
	}{
		{"empty", nil, ""},
		{"sorted", props("b", "2", "a", "1", "C", "3"), "C=3\na=1\nb=2\n"},
		{"separators stay raw in values", props("k", "a=b:c#d!e"), "k=a=b:c#d!e\n"},
		{"windows path backslashes", props("rocketmqHome", `C:\rocketmq\home`), "rocketmqHome=C:\\\\rocketmq\\\\home\n"},
		{"leading space only escaped", props("k", "  a b "), "k=\\  a b \n"},
		{"line breaks and tabs", props("k", "a\nb\rc\td\fe"), "k=a\\nb\\rc\\td\\fe\n"},
		{"key specials", props("a b=c:d#e!f", "v"), "a\\ b\\=c\\:d\\#e\\!f=v\n"},
		{"key with leading hash", props("#k", "v"), "\\#k=v\n"},
		{"empty key and value", props("", ""), "=\n"},
		{"non-ASCII as unicode escapes", props("k", "é世😀"), "k=\\u00E9\\u4E16\\uD83D\\uDE00\n"},
		{"control characters", props("k", "\x00\x1b\x7f"), "k=\\u0000\\u001B\\u007F\n"},
		{"invalid UTF-8 raw", props("k", "\xff"), "k=\xff\n"},
		{"duplicate keys keep the last value", props("a", "1", "b", "2", "a", "3"), "a=3\nb=2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(FormatProperties(tt.in)); got != tt.want {
				t.Fatalf("FormatProperties(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestFormatParseRoundTrip(t *testing.T) {
	in := props(
		"plain", "value",
		"", "empty key",
		"empty", "",
		" lead", " leading space",
		"trail ", "trailing space ",
		"sep=:", "=:=:",
		"#hash", "#hash",
		"!bang", "!bang",
		"back\\slash", `C:\dir\`,
		"lines", "a\nb\r\nc",
		"unicode", "é世😀\uFFFD",
		"control", "\x00\x01\x1f\x7f",
		"invalid", "\xff\xc3",
		"tabs", "\t\fx\t",
		"u-literal", `\u0041`,
	)
	got, err := ParseProperties(FormatProperties(in))
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(in)
	slices.SortFunc(want, func(a, b Property) int { return strings.Compare(a.Key, b.Key) })
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip\n got %q\nwant %q", got, want)
	}
}

// A namesrv.properties as operators write it for the Java NameServer: it must
// load with the same result.
func TestParseJavaSample(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "namesrv.properties"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseProperties(data)
	if err != nil {
		t.Fatal(err)
	}
	want := props(
		"listenPort", "9877",
		"bindAddress", "0.0.0.0",
		"orderMessageEnable", "true",
		"rocketmqHome", "/opt/rocketmq",
		"kvConfigPath", "/home/rocketmq/store/namesrv/kvConfig.json",
		"scanNotActiveBrokerInterval", "10000",
		"serverChannelMaxIdleTimeSeconds", "180",
		"configBlackList", "configBlackList;configStorePath;kvConfigPath;listenPort",
		"clientWorkerThreads", "4",
		"connectTimeoutMillis", "3000",
		"productEnvName", "prod east",
		"enableTopicList", "FALSE",
		"serverWorkerThreads", "16",
	)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sample\n got %q\nwant %q", got, want)
	}
}
