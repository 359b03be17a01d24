package remoting

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
)

// probeOpaque identifies the probe's request in its answer.
const probeOpaque = 0x7072

// Probe makes one request round trip through the server's own connection
// loop and handler, over an in-memory connection, and reports whether the
// answer arrived before ctx ended. It is the liveness check of a server
// that may be hung: no network, no TLS (whatever the mode), no connection
// limit, and nothing counted by the Observer. The handler sees an ordinary
// connection (its Closed runs when the probe ends).
//
// A handler that never returns keeps the probe connection's goroutine until
// it does; the probe itself returns at ctx's end.
func (s *Server) Probe(ctx context.Context, code int32) error {
	client, server := net.Pipe()
	defer client.Close()
	if !s.trackConn(server, true) {
		server.Close()
		return ErrServerClosed
	}
	if deadline, ok := ctx.Deadline(); ok {
		client.SetDeadline(deadline)
	}
	stop := context.AfterFunc(ctx, func() { client.Close() })
	defer stop()
	frame := AppendFrame(nil, JSON, &Header{Code: code, Language: "GO", Version: protocol.ServerVersion, Opaque: probeOpaque}, nil)
	if _, err := client.Write(frame); err != nil {
		return probeFailed(ctx, "send", err)
	}
	answer, err := NewFrameReader(bufio.NewReader(client), s.cfg.FrameMaxLength).Next()
	if err != nil {
		return probeFailed(ctx, "read answer", err)
	}
	var dec Decoder
	var cmd Command
	if err := dec.Decode(answer, &cmd); err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	if !cmd.IsResponse() || cmd.Opaque != probeOpaque {
		return fmt.Errorf("probe: unexpected answer (opaque %d, flag %d)", cmd.Opaque, cmd.Flag)
	}
	return nil
}

func probeFailed(ctx context.Context, step string, err error) error {
	if ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("probe: no answer in time: %w", context.DeadlineExceeded)
	}
	return fmt.Errorf("probe: %s: %w", step, err)
}
