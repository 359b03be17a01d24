package header

import "github.com/kube-namesrv/kube-namesrv/namesrv/remoting"

// RegisterBroker is RegisterBrokerRequestHeader (REGISTER_BROKER, 103;
// docs/protocol.md#register-broker).
type RegisterBroker struct {
	// ClusterName, BrokerAddr, BrokerName and BrokerID are required.
	ClusterName string
	BrokerAddr  string
	BrokerName  string
	BrokerID    int64
	// HAServerAddr is required by Java, but brokers always send it and a
	// missing one is accepted, as by the Java 4.9.8 NameServer.
	HAServerAddr string
	// ZoneName is the __ZONE_NAME field 5.x brokers add in zone mode.
	ZoneName string
	// HeartbeatTimeoutMillis is the 5.x per-broker expiry; 0: the default.
	HeartbeatTimeoutMillis int64
	// Modern is set when enableActingMaster was sent, which only 5.x
	// brokers do; EnableActingMaster is its value.
	Modern             bool
	EnableActingMaster bool
	// Compressed is the body's compressed flag (5.x brokers send false
	// even for a zlib body).
	Compressed bool
	// BodyCRC32 is CRC32(body) & 0x7FFFFFFF; 0 skips the check.
	BodyCRC32 int64
}

// Decode reads the header. Every field is read even after an error, so
// BodyCRC32 is usable when only another field is missing.
func (h *RegisterBroker) Decode(cmd *remoting.Command) error {
	f := fields{cmd: cmd}
	h.BodyCRC32 = f.int64("bodyCrc32")
	h.ClusterName = f.required("clusterName")
	h.BrokerAddr = f.required("brokerAddr")
	h.BrokerName = f.required("brokerName")
	h.BrokerID = f.requiredInt64("brokerId")
	h.HAServerAddr = f.string("haServerAddr")
	h.ZoneName = f.string("__ZONE_NAME")
	h.HeartbeatTimeoutMillis = f.int64("heartbeatTimeoutMillis")
	h.Modern = f.has("enableActingMaster")
	h.EnableActingMaster = f.bool("enableActingMaster")
	h.Compressed = f.bool("compressed")
	return f.err
}

// UnregisterBroker is UnRegisterBrokerRequestHeader (UNREGISTER_BROKER,
// 104), all four fields required. The table removes the address whatever
// its id, as 5.x does, but Java refuses the request without brokerId.
type UnregisterBroker struct {
	ClusterName string
	BrokerAddr  string
	BrokerName  string
	BrokerID    int64
}

// Decode reads the header.
func (h *UnregisterBroker) Decode(cmd *remoting.Command) error {
	f := fields{cmd: cmd}
	h.ClusterName = f.required("clusterName")
	h.BrokerAddr = f.required("brokerAddr")
	h.BrokerName = f.required("brokerName")
	h.BrokerID = f.requiredInt64("brokerId")
	return f.err
}

// QueryDataVersion is QueryDataVersionRequestHeader (QUERY_DATA_VERSION,
// 322). The broker is found by cluster and address; the body, which this
// code cannot do without, is the broker's DataVersion.
type QueryDataVersion struct {
	ClusterName string
	BrokerAddr  string
}

// Decode reads the header and checks that a body came with it.
func (h *QueryDataVersion) Decode(cmd *remoting.Command) error {
	f := fields{cmd: cmd}
	h.ClusterName = f.required("clusterName")
	h.BrokerAddr = f.required("brokerAddr")
	if f.err == nil && len(cmd.Body) == 0 {
		f.fail("QUERY_DATA_VERSION needs the broker's DataVersion as its body")
	}
	return f.err
}

// BrokerHeartbeat is BrokerHeartbeatRequestHeader (BROKER_HEARTBEAT, 904);
// the controller fields it also carries mean nothing to a NameServer.
type BrokerHeartbeat struct {
	ClusterName string
	BrokerAddr  string
}

// Decode reads the header.
func (h *BrokerHeartbeat) Decode(cmd *remoting.Command) error {
	f := fields{cmd: cmd}
	h.ClusterName = f.required("clusterName")
	h.BrokerAddr = f.required("brokerAddr")
	return f.err
}

// GetBrokerMemberGroup is GetBrokerMemberGroupRequestHeader
// (GET_BROKER_MEMBER_GROUP, 901). Java echoes ClusterName without checking
// it, and so does the answer here.
type GetBrokerMemberGroup struct {
	ClusterName string
	BrokerName  string
}

// Decode reads the header.
func (h *GetBrokerMemberGroup) Decode(cmd *remoting.Command) error {
	f := fields{cmd: cmd}
	h.BrokerName = f.required("brokerName")
	h.ClusterName = f.string("clusterName")
	return f.err
}

// RegisterTopic is RegisterTopicRequestHeader (REGISTER_TOPIC_IN_NAMESRV,
// 217); the queue data comes in the body.
type RegisterTopic struct {
	Topic string
}

// Decode reads the header.
func (h *RegisterTopic) Decode(cmd *remoting.Command) error {
	f := fields{cmd: cmd}
	h.Topic = f.required("topic")
	return f.err
}
