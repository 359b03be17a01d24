package remoting

import (
	"crypto/tls"
	"log/slog"
	"time"
)

// Config tunes the server. Zero values take the defaults (the Java ones
// where Java has the setting).
type Config struct {
	// FrameMaxLength is the largest frame, length word included.
	FrameMaxLength int
	// IdleTimeout closes a connection that has sent nothing for that long
	// (Java: serverChannelMaxIdleTimeSeconds, 120 s). Negative disables it.
	IdleTimeout time.Duration
	// ReadTimeout bounds how long a frame may take to arrive once its first
	// byte is in, so a client trickling bytes cannot hold a connection
	// open by staying just short of idle. Negative disables it (the idle
	// timeout then applies).
	ReadTimeout time.Duration
	// WriteTimeout bounds how long one flush of answers may block on a
	// client that does not read. Negative disables it.
	WriteTimeout time.Duration
	// MaxConnections closes connections accepted beyond that many open
	// ones; 0 means no limit.
	MaxConnections int
	// MaxInflight is the most answers a connection keeps unwritten: at the
	// bound the server writes them before it decodes the next request, so
	// a client that pipelines without reading is held back by TCP instead
	// of being buffered for.
	MaxInflight int
	// ReadBufferSize is the per-connection read buffer; frames larger than
	// it are read into a buffer of their own.
	ReadBufferSize int
	// SocketSendBuffer and SocketReceiveBuffer set the kernel buffers of
	// each connection (Java's serverSocketSndBufSize/RcvBufSize); 0 keeps
	// the OS default.
	SocketSendBuffer    int
	SocketReceiveBuffer int
	// TLSMode and TLSConfig select TLS. TLSEnforcing without a TLSConfig
	// refuses every connection rather than falling back to plain.
	TLSMode   TLSMode
	TLSConfig *tls.Config
	// HandshakeTimeout bounds, when TLS is possible, the wait for a new
	// connection's first byte and the TLS handshake.
	HandshakeTimeout time.Duration
	Logger           *slog.Logger
	Observer         Observer
}

const (
	defaultIdleTimeout      = 120 * time.Second
	defaultReadTimeout      = 30 * time.Second
	defaultWriteTimeout     = 30 * time.Second
	defaultHandshakeTimeout = 10 * time.Second
	defaultMaxInflight      = 256
	defaultReadBufferSize   = 16 << 10
	// flushThreshold caps how many answer bytes accumulate before a write,
	// so a client pipelining thousands of requests gets answers streamed.
	flushThreshold = 64 << 10
	// keepOutputCap is the largest output buffer kept between batches; a
	// larger one (after a big body) is dropped rather than pinned per
	// connection.
	keepOutputCap = 1 << 20
	// tlsHandshakeRecord is the first byte of every TLS connection (a
	// handshake record). A plain frame starting with it would announce at
	// least 0x16000000 bytes, far beyond any frame limit.
	tlsHandshakeRecord = 0x16
)
