package body

import (
	"bytes"
	"hash/adler32"
	"math/rand/v2"
	"testing"
)

func TestAdler32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 20000)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	for _, tt := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"random", random},
		// Bytes of 255 fill the 16-bit lanes to the brim.
		{"all ones", bytes.Repeat([]byte{0xff}, 20000)},
		{"zeros", make([]byte, 20000)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for n := 0; n <= len(tt.data); n += 1 + n/16 {
				if got, want := updateAdler32(1, tt.data[:n]), adler32.Checksum(tt.data[:n]); got != want {
					t.Fatalf("%d bytes: %08x, want %08x", n, got, want)
				}
			}
			// Continued from a state other than the initial one.
			if len(tt.data) > 0 {
				d := adler32.New()
				d.Write(tt.data[:777])
				d.Write(tt.data[777:])
				if got, want := updateAdler32(updateAdler32(1, tt.data[:777]), tt.data[777:]), d.Sum32(); got != want {
					t.Fatalf("continued: %08x, want %08x", got, want)
				}
			}
		})
	}
}
