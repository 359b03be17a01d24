package nsadmin

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
)

// fakeNamesrv answers each request code as told: what a broken or odd
// NameServer could say, which a real one does not.
type fakeNamesrv map[int32]func(req *remoting.Command, resp *remoting.Response)

func (f fakeNamesrv) Serve(_ *remoting.Conn, req *remoting.Command, resp *remoting.Response) {
	if h, ok := f[req.Code]; ok {
		h(req, resp)
		return
	}
	resp.Fail(protocol.RequestCodeNotSupported, "not faked")
}

func (fakeNamesrv) Closed(*remoting.Conn) {}

func startFake(t *testing.T, f fakeNamesrv) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := remoting.NewServer(f, remoting.Config{})
	done := make(chan struct{})
	go func() {
		_ = s.Serve(l)
		close(done)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		<-done
	})
	return l.Addr().String()
}

func runMain(args ...string) (string, string, int) {
	var stdout, stderr bytes.Buffer
	code := Main(NewDirect(nil), args, IO{Stdout: &stdout, Stderr: &stderr})
	return stdout.String(), stderr.String(), code
}

func TestOddAnswers(t *testing.T) {
	clusterInfo := body.AppendClusterInfo(nil, &body.ClusterInfo{
		Brokers:  []*body.BrokerData{{Cluster: "c", BrokerName: "b", Addrs: []body.BrokerAddr{{Addr: "10.0.0.1:10911"}}}},
		Clusters: []body.ClusterMembers{{Cluster: "c", BrokerNames: []string{"b"}}},
	})
	odd := startFake(t, fakeNamesrv{
		protocol.GetBrokerClusterInfo:          func(_ *remoting.Command, r *remoting.Response) { r.Body = []byte("not json") },
		protocol.WipeWritePermOfBroker:         func(_ *remoting.Command, r *remoting.Response) { r.SetExt("wipeTopicCount", "many") },
		protocol.GetNamesrvConfig:              func(_ *remoting.Command, r *remoting.Response) { r.Body = []byte(`a=\uZZZZ`) },
		protocol.GetAllTopicListFromNameserver: func(_ *remoting.Command, r *remoting.Response) { r.Fail(protocol.SystemError, "disable") },
	})
	// A peer whose tables decode but one route does not.
	halfway := startFake(t, fakeNamesrv{
		protocol.GetBrokerClusterInfo: func(_ *remoting.Command, r *remoting.Response) { r.Body = clusterInfo },
		protocol.GetAllTopicListFromNameserver: func(_ *remoting.Command, r *remoting.Response) {
			r.Body = body.AppendTopicList(nil, &body.TopicList{Topics: []string{"Bad", "Good"}})
		},
		protocol.GetRouteInfoByTopic: func(req *remoting.Command, r *remoting.Response) {
			if topic, _ := req.ExtValue("topic"); string(topic) == "Bad" {
				r.Body = []byte(`{"queueDatas":{}}`)
				return
			}
			r.Body = body.AppendTopicRouteData(nil, &body.TopicRouteData{QueueDatas: []body.QueueData{{BrokerName: "b", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}}}, 0)
		},
		protocol.GetKVListByNamespace: func(_ *remoting.Command, r *remoting.Response) {
			r.Code, r.Remark = protocol.QueryNotFound, []byte("No config item, Namespace: NS")
		},
	})

	for _, tt := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"clusterList", "-n", odd}, ExitFailed, "", odd + ": unexpected answer body: decode cluster info: json: "},
		{[]string{"wipeWritePerm", "-b", "b", "-n", odd}, ExitFailed, "wipe write perm of broker[b] in name server[" + odd + "] Failed",
			`wipeTopicCount "many" is not a number`},
		{[]string{"getNamesrvConfig", "-n", odd}, ExitFailed, "", "unexpected answer body: configuration"},
		{[]string{"topicList", "-n", odd}, ExitRefused, "", "refused: SYSTEM_ERROR: disable (the NameServer has this list switched off"},
		{[]string{"addWritePerm", "-b", "b", "-n", odd}, ExitRefused, "Failed", "refused: REQUEST_CODE_NOT_SUPPORTED: not faked (this NameServer does not know the request"},
		{[]string{"kvList", "-s", "NS", "-n", halfway}, ExitOK, "#Namespace", ""},
		{[]string{"diff", "-n", halfway + ";" + odd}, ExitFailed, "FAILED: unexpected answer body: decode topic route data: json: expected an array at queueDatas", ""},
		{[]string{"clusterList", "-n", halfway, "--serialize-type", "ROCKETMQ"}, ExitOK, "10.0.0.1:10911", ""},
	} {
		out, errOut, code := runMain(tt.args...)
		if code != tt.code || !strings.Contains(out, tt.stdout) || !strings.Contains(errOut, tt.stderr) {
			t.Errorf("%v: exit %d, want %d\nstdout (want %q):\n%s\nstderr (want %q):\n%s", tt.args, code, tt.code, tt.stdout, out, tt.stderr, errOut)
		}
	}
}

func TestBadTLSFiles(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"clusterList", "-n", "127.0.0.1:9", "--tls-ca", junk}, "holds no PEM certificate"},
		{[]string{"clusterList", "-n", "127.0.0.1:9", "--tls-cert", junk, "--tls-key", junk}, "--tls-cert/--tls-key:"},
	} {
		if _, errOut, code := runMain(tt.args...); code != ExitUsage || !strings.Contains(errOut, tt.stderr) {
			t.Errorf("%v: exit %d, stderr %q", tt.args, code, errOut)
		}
	}
}
