package remotingclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting/tlstest"
)

// echo answers every request with its code as the remark and its body.
type echo struct{}

func (echo) Serve(_ *remoting.Conn, req *remoting.Command, resp *remoting.Response) {
	resp.Remark = strconv.AppendInt(resp.Remark, int64(req.Code), 10)
	resp.Body = req.Body
	if v, ok := req.ExtValue("k"); ok {
		resp.SetExt("k", string(v))
	}
}

func (echo) Closed(*remoting.Conn) {}

func serve(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := remoting.NewServer(echo{}, remoting.Config{})
	done := make(chan struct{})
	go func() { _ = srv.Serve(l); close(done) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	})
	return l.Addr().String()
}

func TestInvokeMatchesAnswersAndOwnsThem(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, typ := range []remoting.SerializeType{remoting.JSON, remoting.RocketMQ} {
		c, err := Dial(ctx, serve(t), Options{Type: typ})
		if err != nil {
			t.Fatal(err)
		}
		// Several requests in flight at once, each matched to its answer.
		results := make(chan error, 20)
		bodies := make([]*Response, 20)
		for i := range bodies {
			go func() {
				r, err := c.Invoke(ctx, &Request{Code: protocol.GetNamesrvConfig, Ext: []remoting.Pair{{Key: "k", Value: strings.Repeat("v", i)}},
					Body: bytes.Repeat([]byte{byte(i)}, 100*i)})
				bodies[i] = r
				results <- err
			}()
		}
		for range bodies {
			if err := <-results; err != nil {
				t.Fatal(err)
			}
		}
		for i, r := range bodies {
			if r.Type != typ || r.Code != protocol.Success || r.Remark != "319" || r.Ext["k"] != strings.Repeat("v", i) ||
				!bytes.Equal(r.Body, bytes.Repeat([]byte{byte(i)}, 100*i)) {
				t.Fatalf("answer %d: type %v code %d ext %v, %d body bytes", i, r.Type, r.Code, r.Ext, len(r.Body))
			}
		}
		if err := c.Oneway(&Request{Code: protocol.GetNamesrvConfig}); err != nil {
			t.Fatal(err)
		}
		c.Close()
		if _, err := c.Invoke(ctx, &Request{Code: protocol.GetNamesrvConfig}); !errors.Is(err, ErrClosed) {
			t.Fatalf("after Close: %v", err)
		}
	}
}

// TestAnswerOverTheLimitEndsTheConnection: a length word over 64 MiB fails
// every pending request with ErrClosed, naming the length.
func TestAnswerOverTheLimitEndsTheConnection(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	c := New(client, Options{})
	defer c.Close()
	go func() {
		// Swallow the request, then answer with an impossible length.
		buf := make([]byte, 1024)
		_, _ = server.Read(buf)
		_, _ = server.Write(binary.BigEndian.AppendUint32(nil, 64<<20+1))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.Invoke(ctx, &Request{Code: protocol.GetNamesrvConfig})
	if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "67108865") {
		t.Fatalf("err = %v, want ErrClosed naming the length", err)
	}
	<-c.Done()
}

func TestDialTLSPresentsTheClientCertificate(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := remoting.NewServer(whoami{}, remoting.Config{TLSMode: remoting.TLSEnforcing, TLSConfig: &tls.Config{
		Certificates: []tls.Certificate{ca.Server(t).TLS}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool(),
	}})
	done := make(chan struct{})
	go func() { _ = srv.Serve(l); close(done) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, l.Addr().String(), Options{TLS: &tls.Config{
		RootCAs: ca.Pool(), ServerName: "127.0.0.1", Certificates: []tls.Certificate{ca.Client(t, "broker-a").TLS},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Invoke(ctx, &Request{Code: 105})
	if err != nil || r.Remark != "broker-a" {
		t.Fatalf("answer %+v, %v", r, err)
	}
	// A server the client does not trust: the handshake fails, and Dial
	// says so.
	_, err = Dial(ctx, l.Addr().String(), Options{TLS: &tls.Config{RootCAs: tlstest.NewCA(t, "other").Pool(), ServerName: "127.0.0.1"}})
	if err == nil || !strings.Contains(err.Error(), "TLS handshake") {
		t.Fatalf("untrusted server: %v", err)
	}
}

// whoami answers with the CN of the peer's verified certificate.
type whoami struct{}

func (whoami) Serve(c *remoting.Conn, _ *remoting.Command, resp *remoting.Response) {
	if cert := c.PeerCertificate(); cert != nil {
		resp.Remark = append(resp.Remark, cert.Subject.CommonName...)
	}
}

func (whoami) Closed(*remoting.Conn) {}
