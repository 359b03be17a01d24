package namesrv_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
)

// freePort finds a loopback port nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestExtraListenPortsServeLikeTheMainOne: a NameServer moving to a new port
// answers on the old one too, the same table behind both, so brokers and
// clients that still use the old port keep working.
func TestExtraListenPortsServeLikeTheMainOne(t *testing.T) {
	old := freePort(t)
	s := startServer(t, func(c *config.Config) { c.ExtraListenPorts = strconv.Itoa(old) })
	oldAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(old))
	rc, err := remotingclient.Dial(t.Context(), oldAddr, remotingclient.Options{})
	if err != nil {
		t.Fatalf("the extra port does not answer: %v", err)
	}
	defer rc.Close()
	if resp := invoke(t, rc, protocol.PutKVConfig, nil, "namespace", "N", "key", "k", "value", "v"); resp.Code != protocol.Success {
		t.Fatalf("PUT_KV_CONFIG on the extra port: %+v", resp)
	}
	main := dial(t, s, remotingclient.Options{})
	if resp := invoke(t, main, protocol.GetKVConfig, nil, "namespace", "N", "key", "k"); resp.Code != protocol.Success || resp.Ext["value"] != "v" {
		t.Fatalf("the main port does not see what the extra port wrote: %+v", resp)
	}
}
