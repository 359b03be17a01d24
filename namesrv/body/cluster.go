package body

import (
	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
)

// ClusterInfo is the answer to GET_BROKER_CLUSTER_INFO.
type ClusterInfo struct {
	// Brokers is sorted by broker name.
	Brokers []*BrokerData
	// Clusters is sorted by cluster name, each with sorted broker names.
	Clusters []ClusterMembers
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
