// Command namesrv runs a RocketMQ NameServer, wire-compatible with the Java
// one: `namesrv` alone listens on :9876 with Java's defaults; `namesrv -c
// namesrv.properties` reads a Java properties file unchanged; `namesrv -p`
// prints every property and exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kube-namesrv/kube-namesrv/internal/version"
	"github.com/kube-namesrv/kube-namesrv/namesrv"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
)

// shutdownTimeout bounds how long SIGTERM waits for in-flight requests; it
// stays below Kubernetes' default 30 s grace period.
const shutdownTimeout = 20 * time.Second

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs, cl := config.NewCommandLine("namesrv", stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "namesrv: unexpected arguments %q\n", fs.Args())
		return 2
	}
	cfg, extra, unknown, err := cl.Resolve()
	if err != nil {
		fmt.Fprintf(stderr, "namesrv: %v\n", err)
		return 1
	}
	if cl.PrintConfig {
		stdout.Write(config.Text(cfg, extra))
		return 0
	}
	log := newLogger(stderr, cl.LogFormat, cl.LogLevel)
	log.Info("starting namesrv", "version", version.Version)
	if len(unknown) > 0 {
		log.Warn("configuration has keys this NameServer does not know; they are kept but have no effect", "keys", unknown)
	}

	// Caught before the server starts: it logs "boot success" from Start,
	// and a SIGTERM that follows at once must stop it gracefully, not kill
	// it.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	srv, err := namesrv.New(namesrv.Options{Config: cfg, Extra: extra, Logger: log})
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	if err := srv.Start(); err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	<-ctx.Done()
	log.Info("shutting down: no new connections, answering requests already received")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Error("shutdown did not finish cleanly", "err", err)
		return 1
	}
	log.Info("stopped")
	return 0
}

func newLogger(w io.Writer, format string, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
