package body

import (
	"bytes"
	stdzlib "compress/zlib"
	"errors"
	"io"
	"strings"
	"testing"
)

// stdInflate is inflate with the standard library's zlib reader: the
// reference inflate must agree with.
func stdInflate(data []byte, limit int) ([]byte, error) {
	zr, err := stdzlib.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(zr, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(out) > limit {
		return nil, ErrTooLarge
	}
	return out, nil
}

func TestInflateLimit(t *testing.T) {
	raw := bytes.Repeat([]byte("topic 8 8 6 SINGLE_TAG "), 4096)
	data := zlibOf(t, raw)
	for _, tt := range []struct {
		name  string
		limit int
		err   error
	}{
		{"well below", 2 * len(raw), nil},
		{"exactly", len(raw), nil},
		{"one byte over", len(raw) - 1, ErrTooLarge},
		{"far over", 100, ErrTooLarge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := inflate(data, tt.limit)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err %v, want %v", err, tt.err)
			}
			if err == nil && !bytes.Equal(out, raw) {
				t.Fatalf("inflated %d bytes, want the %d compressed", len(out), len(raw))
			}
		})
	}
	if _, err := inflate(data[:len(data)/2], 0); err == nil || !strings.Contains(err.Error(), "zlib") {
		t.Fatalf("truncated stream: err %v", err)
	}
}

// FuzzInflate checks that inflate, with klauspost/compress, yields exactly
// what the standard library's zlib reader yields for the same stream: the
// same bytes, or an error from both; and that a valid stream inflating
// past the limit is refused as too large (a broken one may be refused
// for either reason, depending on where each reader notices). compress
// first deflates the input with the standard library, so that the fuzzer
// reaches valid streams of any content as well as broken ones.
func FuzzInflate(f *testing.F) {
	f.Add(zlibOf(f, []byte("topic 8 8 6 SINGLE_TAG")), false, uint16(0))
	f.Add(golden(f, "register-compressed-4.9.8.zlib"), false, uint16(100))
	f.Add([]byte("topic 8 8 6 SINGLE_TAG {}"), true, uint16(9))
	f.Add(bytes.Repeat([]byte{0}, 5000), true, uint16(1000))
	f.Fuzz(func(t *testing.T, data []byte, compress bool, limit uint16) {
		if compress {
			data = zlibOf(t, data)
		}
		lim := int(limit) + 1
		want, wantErr := stdInflate(data, lim)
		got, err := inflate(data, lim)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("inflate err %v, standard library err %v", err, wantErr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("inflate gave %d bytes, the standard library %d", len(got), len(want))
		}
		if full, fullErr := stdInflate(data, 64<<20); fullErr == nil && len(full) > lim && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("a valid stream of %d bytes, limit %d: err %v", len(full), lim, err)
		}
	})
}
