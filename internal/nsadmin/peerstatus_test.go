package nsadmin

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// listenSamePort listens on one port of every loopback address given (all
// of 127.0.0.0/8 is loopback on Linux), as peers that share an HTTP port on
// their own addresses.
func listenSamePort(t *testing.T, ips ...string) (int, []net.Listener) {
	t.Helper()
	for range 20 {
		first, err := net.Listen("tcp", ips[0]+":0")
		if err != nil {
			t.Fatal(err)
		}
		port := first.Addr().(*net.TCPAddr).Port
		ls := []net.Listener{first}
		for _, ip := range ips[1:] {
			l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
			if err != nil {
				break
			}
			ls = append(ls, l)
		}
		if len(ls) == len(ips) {
			for _, l := range ls {
				t.Cleanup(func() { l.Close() })
			}
			return port, ls
		}
		for _, l := range ls {
			l.Close()
		}
	}
	t.Fatalf("no port free on all of %v", ips)
	return 0, nil
}

func serveHTTP(t *testing.T, l net.Listener, h http.HandlerFunc) {
	t.Helper()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
}

func summaryHandler(s peerstatus.Summary) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != peerstatus.SummaryPath {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", peerstatus.ContentType)
		_ = json.NewEncoder(w).Encode(s)
	}
}

func TestPeerStatus(t *testing.T) {
	port, ls := listenSamePort(t, "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5")
	started := time.Now().Add(-time.Hour)
	broker := func(counter int64) peerstatus.Broker {
		return peerstatus.Broker{BrokerKey: peerstatus.BrokerKey{Cluster: "DefaultCluster", Addr: "10.0.0.1:10911"},
			BrokerName: "broker-a", DataVersion: peerstatus.DataVersion{Timestamp: 1700000000000, Counter: counter}}
	}
	serveHTTP(t, ls[0], summaryHandler(peerstatus.Summary{BootID: "0123456789abcdef", StartTime: started,
		Gate:   peerstatus.Gate{Enabled: true, Open: true, OpenedBy: "request", Expected: 1},
		Counts: peerstatus.Counts{Brokers: 1, Clusters: 1, Topics: 12}, Digest: "d1d1d1d1d1d1d1d1", Brokers: []peerstatus.Broker{broker(7)},
		KV: &peerstatus.KVStatus{InSync: true}}))
	serveHTTP(t, ls[1], summaryHandler(peerstatus.Summary{BootID: "fedcba9876543210", StartTime: started,
		Gate:   peerstatus.Gate{Enabled: true, Expected: 2, Missing: []peerstatus.BrokerKey{{Cluster: "DefaultCluster", Addr: "10.0.0.2:10911"}}},
		Counts: peerstatus.Counts{Brokers: 1, Clusters: 1, Topics: 12}, Digest: "d2d2d2d2d2d2d2d2", Brokers: []peerstatus.Broker{broker(6)},
		KV: &peerstatus.KVStatus{Drift: []peerstatus.KVDrift{{Namespace: "NS", Key: "k", Reason: peerstatus.DriftMissing}}}}))
	serveHTTP(t, ls[2], http.NotFound)
	serveHTTP(t, ls[3], func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>")) })

	run := func(peers ...string) (string, string, int) {
		var stdout, stderr bytes.Buffer
		code := Main(NewDirect(nil), []string{"peerStatus", "--http-port", strconv.Itoa(port), "-n", strings.Join(peers, ";")},
			IO{Stdout: &stdout, Stderr: &stderr})
		return stdout.String(), stderr.String(), code
	}

	out, errOut, code := run("127.0.0.2:9876", "127.0.0.3:9876")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	// The #Up column depends on the clock: it is checked apart.
	for _, want := range []string{
		"127.0.0.2:9876                            01234567  1h0m",
		"open (request)            1         12        d1d1d1d1d1d1  in sync\n",
		"127.0.0.3:9876                            fedcba98  1h0m",
		"CLOSED, 1 of 2 missing    1         12        d2d2d2d2d2d2  DRIFT, 1 keys\n",
		"DefaultCluster          10.0.0.1:10911          broker-a                0     0/1700000000000/7                     1/2 on 127.0.0.2:9876",
		"DefaultCluster          10.0.0.1:10911          broker-a                0     0/1700000000000/6                     1/2 on 127.0.0.3:9876",
		"The NameServers DISAGREE on the live brokers and their DataVersions",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	_, errOut, code = run("127.0.0.2:9876", "127.0.0.4:9876")
	if code != ExitRefused || !strings.Contains(errOut, "answers 404: this NameServer serves no route summary") {
		t.Errorf("404: exit %d\n%s", code, errOut)
	}
	_, errOut, code = run("127.0.0.2:9876", "127.0.0.5:9876")
	if code != ExitFailed || !strings.Contains(errOut, "is not a route summary") {
		t.Errorf("not JSON: exit %d\n%s", code, errOut)
	}
	_, errOut, code = run("127.0.0.2:9876", "127.0.0.6:9876")
	if code != ExitFailed || !strings.Contains(errOut, "127.0.0.6:9876: unreachable: nothing listens there (connection refused) (http://127.0.0.6:"+strconv.Itoa(port)+"/routes/summary)") {
		t.Errorf("no HTTP server: exit %d\n%s", code, errOut)
	}
	var stderr bytes.Buffer
	if code := Main(NewDirect(nil), []string{"peerStatus", "--http-port", "0", "-n", "127.0.0.2:9876"}, IO{Stdout: &stderr, Stderr: &stderr}); code != ExitUsage {
		t.Errorf("--http-port 0: exit %d", code)
	}
}
