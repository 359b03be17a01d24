// Package logcapture keeps what a test's server logs, so tests can assert
// that a violation was logged with the fields operators rely on.
package logcapture

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
)

// Buffer is an io.Writer that keeps everything written to it; it is safe
// for the concurrent writes of a server's goroutines.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything logged so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Lines returns the logged lines containing every one of substrs.
func (b *Buffer) Lines(substrs ...string) []string {
	var out []string
	for _, line := range strings.Split(b.String(), "\n") {
		match := line != ""
		for _, s := range substrs {
			match = match && strings.Contains(line, s)
		}
		if match {
			out = append(out, line)
		}
	}
	return out
}

// Logger is a text logger writing into the buffer at the given level.
func (b *Buffer) Logger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: level}))
}
