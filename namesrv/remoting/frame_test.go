package remoting

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
)

// lengthPrefixed returns frames as a stream: each payload after its
// length word.
func lengthPrefixed(payloads ...[]byte) []byte {
	var out []byte
	for _, p := range payloads {
		out = binary.BigEndian.AppendUint32(out, uint32(len(p)))
		out = append(out, p...)
	}
	return out
}

func TestFrameReaderReadsFramesInPlaceAndLarge(t *testing.T) {
	small := bytes.Repeat([]byte("s"), 20)
	large := bytes.Repeat([]byte("L"), 100) // larger than the 32-byte buffer
	stream := lengthPrefixed(small, large, small, large)
	pool := &recordingPool{}
	f := NewFrameReader(bufio.NewReaderSize(bytes.NewReader(stream), 32), 1<<10)
	f.Buffers = pool
	var got [][]byte
	for {
		frame, err := f.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, slices.Clone(frame))
		f.Release()
	}
	if want := [][]byte{small, large, small, large}; !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("frames %q, want %q", got, want)
	}
	// The first large frame's buffer went back to the pool; the second
	// took it and gave it back again.
	if len(pool.puts) != 2 || pool.gets != 2 || &(*pool.puts[0])[0] != &(*pool.puts[1])[0] || cap(*pool.puts[0]) != len(large) {
		t.Fatalf("large frame buffers are not recycled: %d gets, %d puts", pool.gets, len(pool.puts))
	}
}

// recordingPool is a BufferPool that keeps everything it is given (a
// sync.Pool may drop buffers, and does at random under the race detector).
type recordingPool struct {
	gets int
	puts []*[]byte
	free []*[]byte
}

func (p *recordingPool) Get() any {
	p.gets++
	if len(p.free) == 0 {
		return nil
	}
	b := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	return b
}

func (p *recordingPool) Put(b any) {
	p.puts = append(p.puts, b.(*[]byte))
	p.free = append(p.free, b.(*[]byte))
}

func TestFrameReaderRefusesBadLengths(t *testing.T) {
	tests := []struct {
		name     string
		head     []byte
		tooLarge bool
		first    byte
	}{
		{"shorter than a header length", []byte{0, 0, 0, 3}, false, 0},
		{"negative", []byte{0xff, 0xff, 0xff, 0xf0}, false, 0xff},
		{"one byte over the limit", binary.BigEndian.AppendUint32(nil, 1<<10-3), true, 0},
		{"a TLS handshake", []byte{0x16, 0x03, 0x01, 0x02}, true, 0x16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFrameReader(bufio.NewReader(bytes.NewReader(append(tt.head, make([]byte, 64)...))), 1<<10)
			_, err := f.Next()
			var le *FrameLengthError
			if !errors.As(err, &le) || !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want a *FrameLengthError", err)
			}
			if le.TooLarge() != tt.tooLarge || le.FirstByte() != tt.first || le.Max != 1<<10-4 {
				t.Fatalf("%+v: TooLarge %v FirstByte %#x", le, le.TooLarge(), le.FirstByte())
			}
		})
	}
	// The largest frame the limit allows is read.
	payload := make([]byte, 1<<10-4)
	f := NewFrameReader(bufio.NewReader(bytes.NewReader(lengthPrefixed(payload))), 1<<10)
	if frame, err := f.Next(); err != nil || len(frame) != len(payload) {
		t.Fatalf("largest frame: %d bytes, %v", len(frame), err)
	}
}

// TestFrameReaderBeforeRead: the hook runs before reads that block, says
// whether the frame has begun, and its error stops Next.
func TestFrameReaderBeforeRead(t *testing.T) {
	pr, pw := io.Pipe()
	f := NewFrameReader(bufio.NewReaderSize(pr, 64), 1<<10)
	var calls []bool
	f.BeforeRead = func(begun bool) error {
		calls = append(calls, begun)
		return nil
	}
	frames := lengthPrefixed([]byte("abcdef"), []byte("ghijkl"))
	go func() {
		// The first frame in two writes (it begins, then completes); the
		// second with it, so it is read without blocking.
		_, _ = pw.Write(frames[:3])
		_, _ = pw.Write(frames[3:])
		pw.Close()
	}()
	for range 2 {
		if _, err := f.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(calls, []bool{false, true}) {
		t.Fatalf("BeforeRead calls %v, want [false true]", calls)
	}

	stop := errors.New("stop")
	f = NewFrameReader(bufio.NewReader(strings.NewReader("")), 1<<10)
	f.BeforeRead = func(bool) error { return stop }
	if _, err := f.Next(); err != stop {
		t.Fatalf("err = %v, want the hook's error", err)
	}
}

func TestFrameReaderReady(t *testing.T) {
	a, b := []byte("first frame"), []byte("second")
	stream := lengthPrefixed(a, b)
	f := NewFrameReader(bufio.NewReaderSize(bytes.NewReader(stream), 64), 1<<10)
	if f.Ready() {
		t.Fatal("ready before anything was read")
	}
	if frame, err := f.Next(); err != nil || !bytes.Equal(frame, a) {
		t.Fatalf("%q %v", frame, err)
	}
	if !f.Ready() {
		t.Fatal("the second frame is buffered, but not ready")
	}
	if frame, err := f.Next(); err != nil || !bytes.Equal(frame, b) {
		t.Fatalf("%q %v", frame, err)
	}
	if f.Ready() {
		t.Fatal("ready at the end of the stream")
	}

	// A frame cut short is not ready, and Next reports the stream's end.
	f = NewFrameReader(bufio.NewReader(bytes.NewReader(stream[:len(stream)-2])), 1<<10)
	_, _ = f.Next()
	if f.Ready() {
		t.Fatal("a truncated frame is ready")
	}
	if _, err := f.Next(); err == nil {
		t.Fatal("a truncated frame was returned")
	}
}

// FuzzFrameReader: any stream yields frames within the limit or an error,
// never a panic, with small and large frames mixed.
func FuzzFrameReader(f *testing.F) {
	f.Add(lengthPrefixed([]byte("abcd"), bytes.Repeat([]byte("x"), 70)))
	f.Add([]byte{0, 0, 0, 4, 1, 2, 3})
	f.Add([]byte{0x16, 3, 1, 0, 0})
	f.Fuzz(func(t *testing.T, stream []byte) {
		var pool sync.Pool
		r := NewFrameReader(bufio.NewReaderSize(bytes.NewReader(stream), 16), 128)
		r.Buffers = &pool
		for read := 0; ; {
			ready := r.Ready()
			frame, err := r.Next()
			if err != nil {
				if ready {
					var le *FrameLengthError
					if !errors.As(err, &le) {
						t.Fatalf("a ready frame failed: %v", err)
					}
				}
				return
			}
			if len(frame) < 4 || len(frame) > 124 {
				t.Fatalf("frame of %d bytes", len(frame))
			}
			if read += 4 + len(frame); read > len(stream) {
				t.Fatalf("read %d bytes of a %d-byte stream", read, len(stream))
			}
		}
	})
}
