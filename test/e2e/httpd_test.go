//go:build e2e

package e2e

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// httpdBindEnv is the address the workload binds: its Pod IP.
const httpdBindEnv = "E2E_HTTPD_BIND"

// runHTTPD is the smoke test's workload. It serves
//
//	/healthz  503 until -ready-after has passed, then 200
//	/         "<HOSTNAME> <bind address> <pid>"
//	/config   the current content of the -config file, read per request
//
// and stops on SIGTERM or after -max-lifetime, whichever comes first.
func runHTTPD(args []string) int {
	fs := flag.NewFlagSet("httpd", flag.ContinueOnError)
	port := fs.Int("port", 8080, "port to listen on")
	config := fs.String("config", "", "file served at /config")
	readyAfter := fs.Duration("ready-after", 200*time.Millisecond, "time before /healthz succeeds")
	lifetime := fs.Duration("max-lifetime", 10*time.Minute, "time after which the server stops by itself")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	bind := os.Getenv(httpdBindEnv)
	if bind == "" {
		fmt.Fprintf(os.Stderr, "httpd: %s is not set; every Pod must bind its own address\n", httpdBindEnv)
		return 2
	}
	start := time.Now()
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if time.Since(start) < *readyAfter {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/config", func(w http.ResponseWriter, _ *http.Request) {
		b, err := os.ReadFile(*config)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = w.Write(b)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "%s %s %d\n", os.Getenv("HOSTNAME"), bind, os.Getpid())
	})

	ln, err := net.Listen("tcp", net.JoinHostPort(bind, strconv.Itoa(*port)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "httpd:", err)
		return 1
	}
	fmt.Printf("httpd: serving on %s, config %s\n", ln.Addr(), *config)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *lifetime)
	defer cancel()
	go func() {
		<-ctx.Done()
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer scancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "httpd:", err)
		return 1
	}
	fmt.Println("httpd: stopped:", context.Cause(ctx))
	return 0
}
