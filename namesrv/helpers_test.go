package namesrv_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/test/nstest"
)

// testConfig is nstest.Config: a loopback configuration with private
// files, and a listener for the HTTP side.
func testConfig(t testing.TB, tweak func(*config.Config)) (*config.Config, net.Listener) {
	t.Helper()
	return nstest.Config(t, tweak)
}

// startServer is nstest.Start, returning the NameServer itself for the
// helpers below.
func startServer(t testing.TB, tweak func(*config.Config)) *namesrv.Server {
	t.Helper()
	return nstest.Start(t, tweak).Server
}

func dial(t *testing.T, s *namesrv.Server, opts remotingclient.Options) *remotingclient.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := remotingclient.Dial(ctx, s.Addr().String(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func invoke(t *testing.T, c *remotingclient.Client, code int32, body []byte, ext ...string) *remotingclient.Response {
	t.Helper()
	req := &remotingclient.Request{Code: code, Body: body}
	for i := 0; i+1 < len(ext); i += 2 {
		req.Ext = append(req.Ext, remoting.Pair{Key: ext[i], Value: ext[i+1]})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := c.Invoke(ctx, req)
	if err != nil {
		t.Fatalf("request %d: %v", code, err)
	}
	return r
}

// eventually polls cond until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
