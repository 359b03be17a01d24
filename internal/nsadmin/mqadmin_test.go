package nsadmin

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
)

// testdata/mqadmin holds what mqadmin prints for known tables, written from
// its source (tools/.../command: ClusterListSubCommand, TopicRouteSubCommand,
// TopicListSubCommand, TopicClusterSubCommand, GetNamesrvConfigCommand,
// WipeWritePermSubCommand, AddWritePermSubCommand), with the same printf
// formats and its trailing blanks. Where mqadmin iterates a HashMap (the
// clusters of clusterList, the properties of getNamesrvConfig) the files
// list them sorted, as nsadmin does.
//
// nsadmin's output for one NameServer must be mqadmin's, cut to the columns
// a NameServer knows and without trailing blanks.

const peerA = "10.0.0.10:9876"

// onePeer is the base of a report of one NameServer that answered.
func onePeer() base { return base{NameServers: []PeerStatus{{Addr: peerA, OK: true}}} }

func golden(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "mqadmin", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// sameAsMqadmin compares nsadmin's lines with mqadmin's, each mqadmin line
// cut at width (the header's at headerWidth): the columns nsadmin prints.
func sameAsMqadmin(t *testing.T, name string, got string, headerWidth, width int) {
	t.Helper()
	want := golden(t, name)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%s: %d lines, mqadmin prints %d:\n%s", name, len(lines), len(want), got)
	}
	for i, w := range want {
		cut := width
		if i == 0 {
			cut = headerWidth
		}
		if len(w) > cut {
			w = w[:cut]
		}
		if w = strings.TrimRight(w, " "); lines[i] != w {
			t.Errorf("%s line %d:\n got %q\nwant %q", name, i+1, lines[i], w)
		}
	}
}

const all = 1 << 20

func tableOf(t *testing.T, r report) string {
	t.Helper()
	var b bytes.Buffer
	r.table(&b)
	return b.String()
}

func TestClusterListIsMqadmins(t *testing.T) {
	ci := &body.ClusterInfo{
		Brokers: []*body.BrokerData{
			{Cluster: "DefaultCluster", BrokerName: "broker-a", Addrs: body.BrokerAddrs{{ID: 0, Addr: "10.0.0.1:10911"}, {ID: 1, Addr: "10.0.0.2:10911"}}},
			{Cluster: "DefaultCluster", BrokerName: "broker-b", Addrs: body.BrokerAddrs{{ID: 0, Addr: "10.0.0.3:10911"}}},
			{Cluster: "OtherCluster", BrokerName: "broker-c", Addrs: body.BrokerAddrs{{ID: 0, Addr: "10.0.1.1:10911"}}},
		},
		Clusters: []body.ClusterMembers{{Cluster: "DefaultCluster", BrokerNames: []string{"broker-a", "broker-b"}}, {Cluster: "OtherCluster", BrokerNames: []string{"broker-c"}}},
	}
	rep := &clusterListReport{base: onePeer(), Brokers: mergeBrokers([]string{peerA}, map[string]*body.ClusterInfo{peerA: ci}, "")}
	// #Cluster Name, #Broker Name, #BID and #Addr: "%-22s  %-22s  %-4s  %-22s".
	sameAsMqadmin(t, "clusterList.txt", tableOf(t, rep), 76, 76)
}

func TestTopicRouteIsMqadmins(t *testing.T) {
	rd := &body.TopicRouteData{
		BrokerDatas: []*body.BrokerData{
			{Cluster: "DefaultCluster", BrokerName: "broker-a", Addrs: body.BrokerAddrs{{ID: 0, Addr: "10.0.0.1:10911"}, {ID: 1, Addr: "10.0.0.2:10911"}}},
			{Cluster: "DefaultCluster", BrokerName: "broker-b", Addrs: body.BrokerAddrs{{ID: 0, Addr: "10.0.0.3:10911"}}},
		},
		QueueDatas: []body.QueueData{
			{BrokerName: "broker-a", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6},
			{BrokerName: "broker-b", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 4},
		},
	}
	rep := &topicRouteReport{base: onePeer(), Topic: "T", Agreed: true, Routes: []PeerRoute{{Addr: peerA, Route: rd}}}
	for _, m := range mergeRows([]string{peerA}, map[string][]RouteRow{peerA: routeRows(rd)}, func(r RouteRow) string { return r.BrokerName }, RouteRow.same) {
		r := m.Value
		r.Presence = m.Presence
		rep.Brokers = append(rep.Brokers, r)
	}
	// Every column of topicRoute -l.
	sameAsMqadmin(t, "topicRoute-l.txt", tableOf(t, rep), all, all)
}

func TestTopicListIsMqadmins(t *testing.T) {
	var rows []TopicRow
	for _, topic := range []string{"%DLQ%group", "%RETRY%group", "TBW102", "TopicA", "TopicB"} {
		rows = append(rows, TopicRow{Topic: topic, Presence: Presence{On: []string{peerA}}})
	}
	sameAsMqadmin(t, "topicList.txt", tableOf(t, &topicListReport{base: onePeer(), Topics: rows}), all, all)

	rows = nil
	for _, topic := range []string{"TBW102", "TopicA", "TopicB"} {
		rows = append(rows, TopicRow{Cluster: "DefaultCluster", Topic: topic, Presence: Presence{On: []string{peerA}}})
	}
	// #Cluster Name and #Topic; #Consumer Group is the brokers'.
	sameAsMqadmin(t, "topicList-c.txt", tableOf(t, &topicListReport{base: onePeer(), Topics: rows, clusterModel: true}), 70, 86)
}

func TestTopicClusterListIsMqadmins(t *testing.T) {
	rep := &topicClusterReport{base: onePeer(), Clusters: []ClusterRow{{Cluster: "DefaultCluster", Presence: Presence{On: []string{peerA}}}}}
	sameAsMqadmin(t, "topicClusterList.txt", tableOf(t, rep), all, all)
}

func TestGetNamesrvConfigIsMqadmins(t *testing.T) {
	props, err := config.ParseProperties([]byte("listenPort=9876\norderMessageEnable=false\nkvConfigPath=/home/rocketmq/namesrv/kvConfig.json\nclusterTest=false\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]string{}
	for _, p := range props {
		cfg[p.Key] = p.Value
	}
	rep := &configReport{base: onePeer(), Configs: []PeerConfig{{Addr: peerA, Config: cfg}}}
	sameAsMqadmin(t, "getNamesrvConfig.txt", tableOf(t, rep), all, all)
}

func TestWritePermIsMqadmins(t *testing.T) {
	two := 2
	for _, tt := range []struct {
		file, what string
	}{
		{"wipeWritePerm.txt", "wipe write perm of broker[broker-a]"},
		{"addWritePerm.txt", "add write perm of broker[broker-a]"},
	} {
		rep := &writeReport{base: onePeer(), what: tt.what, Results: []WriteResult{{Addr: peerA, OK: true, Count: &two}}}
		sameAsMqadmin(t, tt.file, tableOf(t, rep), all, all)
	}
}

// TestSeveralPeersAddAColumn: with several peers, every line keeps
// mqadmin's columns and adds #NameServers.
func TestSeveralPeersAddAColumn(t *testing.T) {
	ci := func(brokers ...string) *body.ClusterInfo {
		c := &body.ClusterInfo{Clusters: []body.ClusterMembers{{Cluster: "DefaultCluster", BrokerNames: brokers}}}
		for i, b := range brokers {
			c.Brokers = append(c.Brokers, &body.BrokerData{BrokerName: b, Addrs: body.BrokerAddrs{{ID: 0, Addr: "10.0.0." + string(rune('1'+i)) + ":10911"}}})
		}
		return c
	}
	peers := []string{"a:9876", "b:9876", "c:9876"}
	rep := &clusterListReport{
		base:    base{multi: true, NameServers: []PeerStatus{{Addr: "a:9876", OK: true}, {Addr: "b:9876", OK: true}, {Addr: "c:9876", OK: true}}},
		Brokers: mergeBrokers(peers, map[string]*body.ClusterInfo{"a:9876": ci("broker-a", "broker-b"), "b:9876": ci("broker-a", "broker-b"), "c:9876": ci("broker-a")}, ""),
	}
	want := `#Cluster Name           #Broker Name            #BID  #Addr                  #NameServers
DefaultCluster          broker-a                0     10.0.0.1:10911         3/3
DefaultCluster          broker-b                0     10.0.0.2:10911         2/3 missing on c:9876

The NameServers DISAGREE on the live brokers: see the #NameServers column.
`
	if got := tableOf(t, rep); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
