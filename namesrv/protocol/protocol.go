// Package protocol names the numbers of the RocketMQ remoting protocol that the
// NameServer speaks: request codes, response codes, flag bits, permission and
// system-flag bits, and the MQVersion ordinals the server branches on.
//
// The values are carried over exactly from apache/rocketmq (RequestCode,
// ResponseCode, RemotingSysResponseCode, PermName, TopicSysFlag, MQVersion);
// docs/protocol.md explains them.
package protocol

// Request codes answered by the NameServer (docs/protocol.md#request-codes).
const (
	PutKVConfig                   int32 = 100
	GetKVConfig                   int32 = 101
	DeleteKVConfig                int32 = 102
	RegisterBroker                int32 = 103
	UnregisterBroker              int32 = 104
	GetRouteInfoByTopic           int32 = 105
	GetBrokerClusterInfo          int32 = 106
	WipeWritePermOfBroker         int32 = 205
	GetAllTopicListFromNameserver int32 = 206
	DeleteTopicInNamesrv          int32 = 216
	RegisterTopicInNamesrv        int32 = 217
	GetKVListByNamespace          int32 = 219
	GetTopicsByCluster            int32 = 224
	GetSystemTopicListFromNS      int32 = 304
	GetUnitTopicList              int32 = 311
	GetHasUnitSubTopicList        int32 = 312
	GetHasUnitSubUnunitTopicList  int32 = 313
	UpdateNamesrvConfig           int32 = 318
	GetNamesrvConfig              int32 = 319
	QueryDataVersion              int32 = 322
	AddWritePermOfBroker          int32 = 327
	GetBrokerMemberGroup          int32 = 901
	BrokerHeartbeat               int32 = 904
)

// Response codes the NameServer produces (docs/protocol.md#response-codes).
const (
	Success                 int32 = 0
	SystemError             int32 = 1
	SystemBusy              int32 = 2
	RequestCodeNotSupported int32 = 3
	NoPermission            int32 = 16
	TopicNotExist           int32 = 17
	QueryNotFound           int32 = 22
)

// Flag bits of a remoting command (docs/protocol.md#flag-and-opaque).
const (
	FlagResponse int32 = 1 << 0
	FlagOneway   int32 = 1 << 1
)

// Permission bits of a queue (PermName).
const (
	PermPriority int32 = 1 << 3
	PermRead     int32 = 1 << 2
	PermWrite    int32 = 1 << 1
	PermInherit  int32 = 1 << 0
)

// Topic system flags (TopicSysFlag).
const (
	FlagUnit    int32 = 1 << 0
	FlagUnitSub int32 = 1 << 1
)

// MQVersion ordinals the server branches on (docs/protocol.md#versions).
const (
	V3_0_11 int32 = 37  // below: REGISTER_BROKER carries a bare TopicConfigSerializeWrapper
	V3_4_9  int32 = 121 // ali-ons
	V4_5_2  int32 = 317 // rocketmq-client-go
	V4_9_4  int32 = 401 // from here on: route bodies use quoted map keys
	V4_9_8  int32 = 409
	V5_0_0  int32 = 413 // from here on: compressed bodies carry static-topic mappings
	V5_3_3  int32 = 479
)

// ServerVersion is the version ordinal stamped into every response. No client
// reads it from NameServer answers; it says "5.3.3", the newest release whose
// NameServer this server reproduces.
const ServerVersion = V5_3_3

// Namespace of the KV store whose entries give ordered topics their queue layout.
const NamespaceOrderTopicConfig = "ORDER_TOPIC_CONFIG"

// DefaultBrokerExpiryMillis is how long a broker may stay silent before the periodic
// scan evicts it, unless it registered with its own heartbeatTimeoutMillis.
const DefaultBrokerExpiryMillis int64 = 120000
