package body

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
)

// ClusterInfo is the answer to GET_BROKER_CLUSTER_INFO.
type ClusterInfo struct {
	// Brokers is Java's brokerAddrTable, sorted by broker name, each name
	// once.
	Brokers []*BrokerData
	// Clusters is Java's clusterAddrTable, sorted by cluster name, each
	// with its broker names sorted, each once.
	Clusters []ClusterMembers
}

// Broker returns the broker group of that name, or nil.
func (ci *ClusterInfo) Broker(name string) *BrokerData {
	i, found := slices.BinarySearchFunc(ci.Brokers, name, func(b *BrokerData, name string) int { return strings.Compare(b.BrokerName, name) })
	if !found {
		return nil
	}
	return ci.Brokers[i]
}

// ClusterMembers is one entry of clusterAddrTable.
type ClusterMembers struct {
	Cluster     string
	BrokerNames []string
}

// AppendClusterInfo writes a ClusterInfo in the legacy dialect, which Java
// always uses for it (docs/protocol.md#get-broker-cluster-info).
func AppendClusterInfo(dst []byte, ci *ClusterInfo) []byte {
	dst = append(dst, `{"brokerAddrTable":{`...)
	for i := range ci.Brokers {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = fjson.AppendString(dst, ci.Brokers[i].BrokerName, fjson.Legacy)
		dst = append(dst, ':')
		dst = AppendBrokerData(dst, ci.Brokers[i], fjson.Legacy)
	}
	dst = append(dst, `},"clusterAddrTable":{`...)
	for i, c := range ci.Clusters {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = fjson.AppendString(dst, c.Cluster, fjson.Legacy)
		dst = append(dst, ':')
		dst = appendStrings(dst, c.BrokerNames, fjson.Legacy)
	}
	return append(dst, "}}"...)
}

// DecodeClusterInfo reads a GET_BROKER_CLUSTER_INFO answer, as this
// NameServer and Java's write it, in either dialect. A broker group's
// brokerName defaults to its key in brokerAddrTable; one that names another
// broker is an error.
func DecodeClusterInfo(data []byte) (*ClusterInfo, error) {
	r := fjson.NewReader(data)
	ci := &ClusterInfo{}
	for key := range r.Members() {
		if r.Null() {
			continue
		}
		switch string(key) {
		case "brokerAddrTable":
			ci.Brokers = nil
			for name := range r.Members() {
				name := string(name)
				if r.Null() {
					continue
				}
				b := readBrokerData(r)
				switch {
				case b.BrokerName == "":
					b.BrokerName = name
				case b.BrokerName != name:
					r.Fail("brokerName %q differs from its key", b.BrokerName)
				}
				ci.Brokers = append(ci.Brokers, b)
			}
			ci.Brokers = sortedLastWins(ci.Brokers, func(a, b *BrokerData) int { return strings.Compare(a.BrokerName, b.BrokerName) })
		case "clusterAddrTable":
			ci.Clusters = nil
			for name := range r.Members() {
				name := string(name)
				names := readStringList(r)
				slices.Sort(names)
				ci.Clusters = append(ci.Clusters, ClusterMembers{Cluster: name, BrokerNames: slices.Compact(names)})
			}
			ci.Clusters = sortedLastWins(ci.Clusters, func(a, b ClusterMembers) int { return strings.Compare(a.Cluster, b.Cluster) })
		default:
			r.Skip()
		}
	}
	if err := r.End(); err != nil {
		return nil, fmt.Errorf("decode cluster info: %w", err)
	}
	return ci, nil
}

// AppendBrokerMemberGroup writes the GET_BROKER_MEMBER_GROUP answer.
func AppendBrokerMemberGroup(dst []byte, cluster, brokerName string, addrs []BrokerAddr) []byte {
	dst = append(dst, `{"brokerMemberGroup":{"brokerAddrs":`...)
	dst = appendAddrs(dst, addrs, fjson.Legacy)
	dst = append(dst, `,"brokerName":`...)
	dst = fjson.AppendString(dst, brokerName, fjson.Legacy)
	dst = append(dst, `,"cluster":`...)
	dst = fjson.AppendString(dst, cluster, fjson.Legacy)
	return append(dst, "}}"...)
}
