package remoting

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/test/logcapture"

	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting/tlstest"
)

// transportHandler answers with "tls" or "plain" as the remark, so a test
// sees which transport the server thinks it serves.
type transportHandler struct{ *echoHandler }

func (h transportHandler) Serve(c *Conn, req *Command, resp *Response) {
	h.echoHandler.Serve(c, req, resp)
	resp.Remark = append(resp.Remark[:0], "plain"...)
	if c.TLS() {
		resp.Remark = append(resp.Remark[:0], "tls"...)
	}
}

// dialTLS connects with TLS, trusting roots, presenting certs; it returns
// the handshake's error.
func dialTLS(t *testing.T, addr string, roots *x509.CertPool, certs ...tls.Certificate) (*client, *tls.Conn, error) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	cfg := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}
	if len(certs) > 0 {
		// Present the certificate even when the server does not list its
		// issuer among the acceptable ones (Go's client would then send
		// none), so that the server has to judge it.
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &certs[0], nil }
	}
	tc := tls.Client(nc, cfg)
	err = tc.Handshake()
	return &client{t: t, nc: tc, br: bufio.NewReader(tc)}, tc, err
}

// roundTrip sends one request and returns the remark of its answer.
func roundTrip(c *client, opaque int32) (string, error) {
	if _, err := c.nc.Write(request(JSON, 105, opaque, 0, "")); err != nil {
		return "", err
	}
	r, err := c.read()
	if err != nil {
		return "", err
	}
	if r.Opaque != opaque {
		return "", errors.New("answer to opaque " + strconv.Itoa(int(r.Opaque)))
	}
	return string(r.Remark), nil
}

func TestTLSModesWithPlainAndTLSClients(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	serverCert := ca.Server(t)
	withCert := &tls.Config{Certificates: []tls.Certificate{serverCert.TLS}}
	tests := []struct {
		name        string
		mode        TLSMode
		cfg         *tls.Config
		plainReason CloseReason // "" when plain is served
		tlsReason   CloseReason // "" when TLS is served
	}{
		{"disabled", TLSDisabled, withCert, "", ClosedTLSRefused},
		{"permissive", TLSPermissive, withCert, "", ""},
		{"permissive without certificate", TLSPermissive, nil, "", ClosedTLSRefused},
		{"enforcing", TLSEnforcing, withCert, ClosedTLSRequired, ""},
		{"enforcing without certificate", TLSEnforcing, nil, ClosedTLSRequired, ClosedTLSRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := &countingObserver{}
			var logs logcapture.Buffer
			ts := startServer(t, transportHandler{newEchoHandler()},
				Config{TLSMode: tt.mode, TLSConfig: tt.cfg, Observer: obs, Logger: logs.Logger(slog.LevelDebug)})

			plain := dial(t, ts.addr)
			remark, err := roundTrip(plain, 1)
			switch {
			case tt.plainReason == "" && (err != nil || remark != "plain"):
				t.Fatalf("plain client: %q, %v", remark, err)
			case tt.plainReason != "" && err == nil:
				t.Fatalf("plain client served (%q), want the connection closed", remark)
			}

			c, _, err := dialTLS(t, ts.addr, ca.Pool())
			if err == nil {
				remark, err = roundTrip(c, 2)
			}
			switch {
			case tt.tlsReason == "" && (err != nil || remark != "tls"):
				t.Fatalf("TLS client: %q, %v", remark, err)
			case tt.tlsReason != "" && err == nil:
				t.Fatalf("TLS client served (%q), want the handshake refused", remark)
			}

			var want []CloseReason
			for _, r := range []CloseReason{tt.plainReason, tt.tlsReason} {
				if r != "" {
					want = append(want, r)
				}
			}
			waitFor(t, "the refused connections to close", func() bool { return len(obs.reasonsSeen()) == len(want) })
			got := obs.reasonsSeen()
			for _, r := range want {
				found := false
				for _, g := range got {
					found = found || g == r
				}
				if !found {
					t.Fatalf("close reasons %v, want %v", got, want)
				}
				if l := logs.Lines("level=WARN", "remote=127.0.0.1:"); len(l) == 0 {
					t.Fatalf("refusal not logged with the peer:\n%s", logs.String())
				}
			}
		})
	}
}

func TestPipelinedRequestsOverTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	ts := startServer(t, newEchoHandler(), Config{TLSMode: TLSPermissive, ReadBufferSize: 4096,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{ca.Server(t).TLS}}})
	c, _, err := dialTLS(t, ts.addr, ca.Pool())
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	var frames [][]byte
	for i := range n {
		body := ""
		if i%50 == 0 {
			body = string(make([]byte, 20000)) // larger than the read buffer and a TLS record
		}
		frames = append(frames, request(SerializeType(i%2), int32(100+i), int32(i), 0, body))
	}
	go c.send(frames...)
	for i := range n {
		r := c.mustRead()
		if r.Opaque != int32(i) || r.Type != SerializeType(i%2) || (i%50 == 0) != (len(r.Body) == 20000) {
			t.Fatalf("answer %d: opaque %d, %d body bytes", i, r.Opaque, len(r.Body))
		}
	}
}

func TestHandshakeTimeoutFreesSilentConnections(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	cfg := &tls.Config{Certificates: []tls.Certificate{ca.Server(t).TLS}}
	hello := func(nc net.Conn) {
		// The start of a ClientHello, then nothing.
		_, _ = nc.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01})
	}
	tests := map[string]struct {
		mode TLSMode
		send func(net.Conn)
	}{
		"permissive, nothing sent":       {TLSPermissive, func(net.Conn) {}},
		"permissive, half a ClientHello": {TLSPermissive, hello},
		"enforcing, nothing sent":        {TLSEnforcing, func(net.Conn) {}},
		"enforcing, half a ClientHello":  {TLSEnforcing, hello},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			obs := &countingObserver{}
			var logs logcapture.Buffer
			const timeout = 150 * time.Millisecond
			ts := startServer(t, newEchoHandler(), Config{TLSMode: tt.mode, TLSConfig: cfg, HandshakeTimeout: timeout,
				ReadTimeout: time.Minute, IdleTimeout: time.Minute, Observer: obs, Logger: logs.Logger(slog.LevelDebug)})
			// The server's clock starts at accept, before the dial returns.
			start := time.Now()
			c := dial(t, ts.addr)
			tt.send(c.nc)
			c.expectClosed()
			if d := time.Since(start); d < timeout {
				t.Fatalf("closed after %v, before the handshake timeout", d)
			}
			expectViolation(t, obs, &logs, ClosedHandshakeTimeout, LimitHandshakeTimeout, c.nc.LocalAddr().String())
		})
	}
}

// TestHandshakeTimeoutEndsWithTheFirstPlainByte: once a plain frame has
// begun, the frame read timeout applies, not the handshake timeout.
func TestHandshakeTimeoutEndsWithTheFirstPlainByte(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	const timeout = 100 * time.Millisecond
	ts := startServer(t, newEchoHandler(), Config{TLSMode: TLSPermissive, HandshakeTimeout: timeout, ReadTimeout: time.Minute,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{ca.Server(t).TLS}}})
	c := dial(t, ts.addr)
	f := request(JSON, 105, 3, 0, "")
	c.send(f[:2])
	time.Sleep(3 * timeout)
	c.send(f[2:])
	if r := c.mustRead(); r.Opaque != 3 {
		t.Fatalf("answer %+v", r)
	}
}

func TestSilentClientsDoNotBlockTheAcceptLoop(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	ts := startServer(t, newEchoHandler(), Config{TLSMode: TLSPermissive, HandshakeTimeout: time.Minute,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{ca.Server(t).TLS}}})
	for range 10 { // echoHandler's closed channel holds 16
		dial(t, ts.addr) // connects and says nothing
	}
	start := time.Now()
	c, _, err := dialTLS(t, ts.addr, ca.Pool())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(c, 1); err != nil {
		t.Fatal(err)
	}
	plain := dial(t, ts.addr)
	if _, err := roundTrip(plain, 2); err != nil {
		t.Fatal(err)
	}
	// Far below the minute a blocked accept loop would take.
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("served after %v", d)
	}
}

func TestClientCertificates(t *testing.T) {
	ca, other := tlstest.NewCA(t, "ca"), tlstest.NewCA(t, "other")
	good, stranger := ca.Client(t, "broker"), other.Client(t, "stranger")
	tests := []struct {
		auth                     tls.ClientAuthType
		none, trusted, untrusted bool // served?
	}{
		{tls.RequireAndVerifyClientCert, false, true, false},
		{tls.VerifyClientCertIfGiven, true, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.auth.String(), func(t *testing.T) {
			obs := &countingObserver{}
			ts := startServer(t, newEchoHandler(), Config{TLSMode: TLSEnforcing, Observer: obs, TLSConfig: &tls.Config{
				Certificates: []tls.Certificate{ca.Server(t).TLS}, ClientAuth: tt.auth, ClientCAs: ca.Pool(),
			}})
			failed := 0
			for i, tc := range []struct {
				certs []tls.Certificate
				want  bool
			}{{nil, tt.none}, {[]tls.Certificate{good.TLS}, tt.trusted}, {[]tls.Certificate{stranger.TLS}, tt.untrusted}} {
				c, _, err := dialTLS(t, ts.addr, ca.Pool(), tc.certs...)
				if err == nil {
					// Under TLS 1.3 the server's verdict on the client
					// certificate arrives with the first read.
					_, err = roundTrip(c, int32(i))
				}
				if served := err == nil; served != tc.want {
					t.Fatalf("client %d: served %v (%v), want %v", i, served, err, tc.want)
				}
				if err != nil {
					failed++
				}
			}
			waitFor(t, "the failed handshakes to close", func() bool { return len(obs.reasonsSeen()) == failed })
			for _, r := range obs.reasonsSeen() {
				if r != ClosedTLSFailed {
					t.Fatalf("close reasons %v, want only %s", obs.reasonsSeen(), ClosedTLSFailed)
				}
			}
		})
	}
}

// presented returns the serial number of the certificate the server presents.
func presented(t *testing.T, addr string, roots *x509.CertPool) string {
	t.Helper()
	_, tc, err := dialTLS(t, addr, roots)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	return tc.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func TestCertificateFilesAreReloadedWhenTheyChange(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	dir := t.TempDir()
	a, b, c := ca.Server(t), ca.Server(t), ca.Server(t)
	certPath, keyPath := a.Write(t, dir)
	var logs logcapture.Buffer
	files, err := NewCertFiles(CertFilesOptions{CertPath: certPath, KeyPath: keyPath, Logger: logs.Logger(slog.LevelDebug)})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, newEchoHandler(), Config{TLSMode: TLSEnforcing, TLSConfig: files.Config()})
	serialOf := func(c *tlstest.Cert) string { return c.Leaf.SerialNumber.String() }
	if got := presented(t, ts.addr, ca.Pool()); got != serialOf(a) || !files.NotAfter().Equal(a.Leaf.NotAfter) {
		t.Fatalf("presented %s, want %s", got, serialOf(a))
	}

	b.Write(t, dir)
	if got := presented(t, ts.addr, ca.Pool()); got != serialOf(b) || files.Reloads() != 1 {
		t.Fatalf("after the update: presented %s (want %s), %d reloads", got, serialOf(b), files.Reloads())
	}

	// Broken versions keep the last good certificate, and each is
	// reported once, not at every handshake.
	breakages := []func(){
		func() { tlstest.WriteFile(t, certPath, []byte("not a certificate")) },
		func() { tlstest.WriteFile(t, certPath, c.CertPEM) }, // with b's key still in place
		func() { os.Remove(keyPath) },
	}
	for i, breakIt := range breakages {
		breakIt()
		for range 3 {
			if got := presented(t, ts.addr, ca.Pool()); got != serialOf(b) {
				t.Fatalf("breakage %d: presented %s, want the previous %s", i, got, serialOf(b))
			}
		}
		if files.Failures() != int64(i+1) {
			t.Fatalf("breakage %d: %d failures counted", i, files.Failures())
		}
	}
	if l := logs.Lines("level=ERROR", "cannot reload"); len(l) != len(breakages) {
		t.Fatalf("%d error lines, want %d:\n%s", len(l), len(breakages), logs.String())
	}

	c.Write(t, dir)
	if got := presented(t, ts.addr, ca.Pool()); got != serialOf(c) || files.Reloads() != 2 {
		t.Fatalf("after the repair: presented %s (want %s), %d reloads", got, serialOf(c), files.Reloads())
	}
}

// TestSecretVolumeUpdate follows the layout of a Kubernetes Secret volume:
// tls.crt -> ..data/tls.crt, ..data -> a timestamped directory, updated by
// renaming a new ..data symlink over the old one.
func TestSecretVolumeUpdate(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	vol := t.TempDir()
	publish := func(name string, c *tlstest.Cert) {
		dir := filepath.Join(vol, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		c.Write(t, dir)
		if err := os.Symlink(name, filepath.Join(vol, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(vol, "..data_tmp"), filepath.Join(vol, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	first, second := ca.Server(t), ca.Server(t)
	publish("..2026_01_01_00_00_00.1", first)
	for _, f := range []string{"tls.crt", "tls.key"} {
		if err := os.Symlink(filepath.Join("..data", f), filepath.Join(vol, f)); err != nil {
			t.Fatal(err)
		}
	}
	files, err := NewCertFiles(CertFilesOptions{CertPath: filepath.Join(vol, "tls.crt"), KeyPath: filepath.Join(vol, "tls.key")})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, newEchoHandler(), Config{TLSMode: TLSPermissive, TLSConfig: files.Config()})
	if got := presented(t, ts.addr, ca.Pool()); got != first.Leaf.SerialNumber.String() {
		t.Fatalf("presented %s", got)
	}
	publish("..2026_01_02_00_00_00.2", second)
	if got := presented(t, ts.addr, ca.Pool()); got != second.Leaf.SerialNumber.String() {
		t.Fatalf("after the Secret update: presented %s, want %s", got, second.Leaf.SerialNumber)
	}
}

func TestNewCertFilesRefusesBadFiles(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	dir := t.TempDir()
	a, b := ca.Server(t), ca.Server(t)
	certPath, keyPath := a.Write(t, dir)
	otherKey := filepath.Join(dir, "other.key")
	tlstest.WriteFile(t, otherKey, b.KeyPEM)
	garbage := filepath.Join(dir, "garbage")
	tlstest.WriteFile(t, garbage, []byte("-----BEGIN NOTHING-----"))
	caPath := filepath.Join(dir, "ca.crt")
	tlstest.WriteFile(t, caPath, ca.PEM)
	tests := map[string]CertFilesOptions{
		"no key":                    {CertPath: certPath},
		"missing certificate":       {CertPath: filepath.Join(dir, "missing.crt"), KeyPath: keyPath},
		"missing key":               {CertPath: certPath, KeyPath: filepath.Join(dir, "missing.key")},
		"key of another cert":       {CertPath: certPath, KeyPath: otherKey},
		"garbage certificate":       {CertPath: garbage, KeyPath: keyPath},
		"client auth without CAs":   {CertPath: certPath, KeyPath: keyPath, ClientAuth: tls.RequireAndVerifyClientCert},
		"CA file without any cert":  {CertPath: certPath, KeyPath: keyPath, ClientCAPath: garbage, ClientAuth: tls.RequireAndVerifyClientCert},
		"missing CA file":           {CertPath: certPath, KeyPath: keyPath, ClientCAPath: filepath.Join(dir, "none"), ClientAuth: tls.VerifyClientCertIfGiven},
		"certificate given for key": {CertPath: certPath, KeyPath: certPath},
	}
	for name, opts := range tests {
		if _, err := NewCertFiles(opts); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := NewCertFiles(CertFilesOptions{CertPath: certPath, KeyPath: keyPath, ClientCAPath: caPath,
		ClientAuth: tls.RequireAndVerifyClientCert}); err != nil {
		t.Fatalf("good files refused: %v", err)
	}
}

// peerHandler answers with what the connection knows of its peer: the
// verified certificate's CN ("-" for none), its address, and the tag it
// kept from the previous request.
type peerHandler struct{ *echoHandler }

func (h peerHandler) Serve(c *Conn, req *Command, resp *Response) {
	cn := "-"
	if cert := c.PeerCertificate(); cert != nil {
		cn = cert.Subject.CommonName
	}
	resp.Remark = append(resp.Remark[:0], cn+" "+c.PeerAddr().String()+" "+strconv.FormatUint(c.Tag(), 10)...)
	c.SetTag(c.Tag() + 1)
}

// TestPeerIdentity: the handler sees the verified client certificate and
// the peer's address, never an unverified certificate, and keeps its tag
// per connection.
func TestPeerIdentity(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	good := ca.Client(t, "broker-a")
	tests := []struct {
		name  string
		auth  tls.ClientAuthType
		certs []tls.Certificate
		want  string // CN the handler sees
	}{
		{"verified", tls.VerifyClientCertIfGiven, []tls.Certificate{good.TLS}, "broker-a"},
		{"none given", tls.VerifyClientCertIfGiven, nil, "-"},
		// RequestClientCert takes any certificate without verifying it:
		// such a certificate must not count as the peer's identity.
		{"unverified", tls.RequestClientCert, []tls.Certificate{good.TLS}, "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, peerHandler{newEchoHandler()}, Config{TLSMode: TLSPermissive, TLSConfig: &tls.Config{
				Certificates: []tls.Certificate{ca.Server(t).TLS}, ClientAuth: tt.auth, ClientCAs: ca.Pool(),
			}})
			c, tc, err := dialTLS(t, ts.addr, ca.Pool(), tt.certs...)
			if err != nil {
				t.Fatal(err)
			}
			local := tc.LocalAddr().String()
			for i, tag := range []string{"0", "1"} {
				remark, err := roundTrip(c, int32(i))
				if want := tt.want + " " + local + " " + tag; err != nil || remark != want {
					t.Fatalf("request %d: %q, %v; want %q", i, remark, err, want)
				}
			}
			plain := dial(t, ts.addr)
			if remark, err := roundTrip(plain, 9); err != nil || remark != "- "+plain.nc.LocalAddr().String()+" 0" {
				t.Fatalf("plain connection: %q, %v", remark, err)
			}
		})
	}
}
