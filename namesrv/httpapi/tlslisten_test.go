package httpapi

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting/tlstest"
)

// serveSniffing serves an HTTP handler that says how it was reached over
// SniffTLS and returns the address.
func serveSniffing(t *testing.T, ca *tlstest.CA, enforce bool, timeout time.Duration) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{ca.Server(t).TLS}, ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: ca.Pool()}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.TLS == nil:
				_, _ = io.WriteString(w, "plain")
			case len(r.TLS.VerifiedChains) > 0:
				_, _ = io.WriteString(w, "tls "+r.TLS.PeerCertificates[0].Subject.CommonName)
			default:
				_, _ = io.WriteString(w, "tls")
			}
		}),
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(SniffTLS(l, cfg, enforce, timeout, nil)) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	return l.Addr().String()
}

func fetch(t *testing.T, c *http.Client, url string) (int, string, error) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func httpsClient(ca *tlstest.CA, certs ...tls.Certificate) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), Certificates: certs}, DisableKeepAlives: true,
	}}
}

func TestSniffTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	plain := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	// A kubelet HTTPS probe: no client certificate, no verification.
	probe := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true, //nolint:gosec // what the kubelet does
	}}
	for _, enforce := range []bool{false, true} {
		addr := serveSniffing(t, ca, enforce, 5*time.Second)
		code, body, err := fetch(t, plain, "http://"+addr+"/")
		switch {
		case !enforce && (err != nil || body != "plain"):
			t.Fatalf("permissive, plain: %d %q %v", code, body, err)
		case enforce && (err != nil || code != http.StatusBadRequest || !strings.Contains(body, "HTTPS")):
			t.Fatalf("enforcing, plain: %d %q %v", code, body, err)
		}
		for _, tt := range []struct {
			name   string
			client *http.Client
			want   string
		}{
			{"no client certificate", httpsClient(ca), "tls"},
			{"client certificate", httpsClient(ca, ca.Client(t, "operator").TLS), "tls operator"},
			{"kubelet probe", probe, "tls"},
		} {
			if code, body, err := fetch(t, tt.client, "https://"+addr+"/"); err != nil || code != 200 || body != tt.want {
				t.Fatalf("enforce=%v, %s: %d %q %v", enforce, tt.name, code, body, err)
			}
		}
		// A certificate of another CA, presented even though the server
		// does not list its issuer, fails the handshake.
		stranger := tlstest.NewCA(t, "other").Client(t, "x").TLS
		c := httpsClient(ca)
		c.Transport.(*http.Transport).TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &stranger, nil
		}
		if _, _, err := fetch(t, c, "https://"+addr+"/"); err == nil {
			t.Fatalf("enforce=%v: a stranger's certificate was accepted", enforce)
		}
	}
}

// TestSniffTLSSilentClients: a client that connects and sends nothing is
// closed after the timeout and holds up nobody else meanwhile.
func TestSniffTLSSilentClients(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	addr := serveSniffing(t, ca, false, 200*time.Millisecond)
	var silent []net.Conn
	for range 5 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		silent = append(silent, c)
	}
	plain := &http.Client{Timeout: 5 * time.Second}
	if _, body, err := fetch(t, plain, "http://"+addr+"/"); err != nil || body != "plain" {
		t.Fatalf("served behind silent clients: %q %v", body, err)
	}
	for _, c := range silent {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Fatalf("silent connection: %v, want closed by the server", err)
		}
	}
}
