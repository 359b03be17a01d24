package remoting

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// FrameReader reads the frames of a stream (docs/protocol.md#framing): a
// big-endian int32 length that does not count itself, then that many bytes.
// The server, the test clients and the load generator all read frames with
// it, each with its own limit.
//
// Frames that fit the bufio.Reader's buffer are returned in place, without
// a copy; larger ones are read into a buffer of their own. A FrameReader is
// not safe for concurrent use.
type FrameReader struct {
	br *bufio.Reader
	// maxTotal is the largest length word accepted.
	maxTotal int

	// Buffers, when set, recycles the buffers of frames larger than the
	// read buffer between readers: a NameServer receives a full broker
	// registration (up to 16 MiB) every 30 s per broker, and sharing the
	// buffers saves allocating and zeroing one each time.
	Buffers BufferPool
	// BeforeRead, when set, runs before each read that may block. begun is
	// false while the reader waits for the first byte of a frame (an idle
	// stream) and true once part of the frame has arrived. An error it
	// returns ends Next with that error, before reading. The server writes
	// the answers it owes and sets the read deadline here.
	BeforeRead func(begun bool) error

	// inPlace is how much of br's buffer the current frame occupies.
	inPlace int
	// own is the current frame's own buffer, when it did not fit br's.
	own []byte
}

// BufferPool is what a FrameReader uses of a *sync.Pool holding *[]byte.
type BufferPool interface {
	Get() any
	Put(any)
}

// FrameLengthError is a length word outside [4, max]. The stream cannot be
// resynchronised after one; like Java, the server closes the connection
// without an answer.
type FrameLengthError struct {
	// Length is the length word as sent, read as a signed int32.
	Length int
	// Max is the largest length word accepted.
	Max int
}

func (e *FrameLengthError) Error() string {
	if e.TooLarge() {
		return fmt.Sprintf("frame of %d bytes exceeds the limit of %d", e.Length, e.Max)
	}
	return fmt.Sprintf("bad frame length %d", e.Length)
}

// Is makes errors.Is(err, ErrMalformed) true for length errors.
func (e *FrameLengthError) Is(target error) bool { return target == ErrMalformed }

// TooLarge tells a frame over the limit from a malformed length word.
func (e *FrameLengthError) TooLarge() bool { return e.Length > e.Max }

// FirstByte is the first byte of the stream's length word; 0x16 there is a
// TLS handshake record sent to a plain port.
func (e *FrameLengthError) FirstByte() byte { return byte(uint32(e.Length) >> 24) }

// NewFrameReader reads frames from br, refusing frames longer than
// maxLength, length word included (Java's frameMaxLength; the server's
// Config.FrameMaxLength).
func NewFrameReader(br *bufio.Reader, maxLength int) *FrameReader {
	return &FrameReader{br: br, maxTotal: maxLength - 4}
}

// Next returns the next frame without its length word: serialize type,
// header length, header and body, which is what Decoder.Decode takes. The
// bytes are valid until Release or the next Next. Read errors are returned
// as they are; a length outside the limits is a *FrameLengthError.
func (f *FrameReader) Next() ([]byte, error) {
	f.Release()
	if f.br.Buffered() < 4 {
		if err := f.fill(4); err != nil {
			return nil, err
		}
	}
	head, _ := f.br.Peek(4)
	total := int(int32(binary.BigEndian.Uint32(head)))
	if total < 4 || total > f.maxTotal {
		return nil, &FrameLengthError{Length: total, Max: f.maxTotal}
	}
	n := 4 + total
	if n <= f.br.Size() {
		if f.br.Buffered() < n {
			if err := f.fill(n); err != nil {
				return nil, err
			}
		}
		b, _ := f.br.Peek(n)
		f.inPlace = n
		return b[4:], nil
	}
	_, _ = f.br.Discard(4) // peeked above: the bytes are buffered
	if p, ok := f.pooled(); ok && cap(p) >= total {
		f.own = p
	} else {
		f.own = make([]byte, total)
	}
	frame := f.own[:total]
	if err := f.beforeRead(true); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(f.br, frame); err != nil {
		return nil, err
	}
	return frame, nil
}

// Release lets go of the current frame: its bytes leave the read buffer,
// or its own buffer goes back to Buffers. Next does it too; a reader that
// may then wait long for the next frame (the server, between a broker's
// registrations) releases as soon as the frame is handled.
func (f *FrameReader) Release() {
	if f.inPlace > 0 {
		_, _ = f.br.Discard(f.inPlace) // peeked by Next: the bytes are buffered
		f.inPlace = 0
	}
	if f.own != nil {
		if f.Buffers != nil {
			own := f.own
			f.Buffers.Put(&own)
		}
		f.own = nil
	}
}

// Ready reports whether the frame after the current one has arrived in
// full, so that Next will return it without reading.
func (f *FrameReader) Ready() bool {
	avail := f.br.Buffered() - f.inPlace
	if avail < 4 {
		return false
	}
	head, _ := f.br.Peek(f.inPlace + 4)
	n := int(int32(binary.BigEndian.Uint32(head[f.inPlace:])))
	return n <= f.br.Size()-4 && avail >= 4+n
}

func (f *FrameReader) pooled() ([]byte, bool) {
	if f.Buffers == nil {
		return nil, false
	}
	p, ok := f.Buffers.Get().(*[]byte)
	if !ok {
		return nil, false
	}
	return *p, true
}

// fill blocks until n bytes (at most the buffer size) are buffered. Waiting
// for the first byte of a frame and waiting for the rest of it are told
// apart for BeforeRead: the first is idleness, the second a frame that
// must arrive by its deadline, however slowly it trickles in.
func (f *FrameReader) fill(n int) error {
	if f.br.Buffered() == 0 {
		if err := f.beforeRead(false); err != nil {
			return err
		}
		if _, err := f.br.Peek(1); err != nil {
			return err
		}
		if f.br.Buffered() >= n {
			return nil
		}
	}
	if err := f.beforeRead(true); err != nil {
		return err
	}
	_, err := f.br.Peek(n)
	return err
}

func (f *FrameReader) beforeRead(begun bool) error {
	if f.BeforeRead == nil {
		return nil
	}
	return f.BeforeRead(begun)
}
