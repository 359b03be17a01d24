package header

import "github.com/kube-namesrv/kube-namesrv/namesrv/remoting"

// WritePermOfBroker is the header of WIPE_WRITE_PERM_OF_BROKER (205) and
// ADD_WRITE_PERM_OF_BROKER (327), Java's WipeWritePermOfBrokerRequestHeader
// and AddWritePermOfBrokerRequestHeader, which hold the same field.
type WritePermOfBroker struct {
	BrokerName string
}

// Decode reads the header.
func (h *WritePermOfBroker) Decode(cmd *remoting.Command) error {
	f := fields{cmd: cmd}
	h.BrokerName = f.required("brokerName")
	return f.err
}

// DeleteTopicInNamesrv is DeleteTopicFromNamesrvRequestHeader
// (DELETE_TOPIC_IN_NAMESRV, 216). An empty ClusterName deletes the topic
// from every cluster.
type DeleteTopicInNamesrv struct {
	Topic       string
	ClusterName string
}

// Decode reads the header.
func (h *DeleteTopicInNamesrv) Decode(cmd *remoting.Command) error {
	f := fields{cmd: cmd}
	h.Topic = f.required("topic")
	h.ClusterName = f.string("clusterName")
	return f.err
}

// GetTopicsByCluster is GetTopicsByClusterRequestHeader
// (GET_TOPICS_BY_CLUSTER, 224). Java requires Cluster; an absent one lists
// the topics of no cluster, as an unknown one does.
type GetTopicsByCluster struct {
	Cluster string
}

// Decode reads the header, which has no field that can be refused.
func (h *GetTopicsByCluster) Decode(cmd *remoting.Command) {
	f := fields{cmd: cmd}
	h.Cluster = f.string("cluster")
}
