// Package authz decides which peers of the NameServer's remoting port may
// send which requests. Every request code belongs to one role (broker,
// admin or read: Codes), and a role is granted by the peer's verified
// client certificate (its subject CN, DNS or URI SANs, e.g. SPIFFE IDs) or
// by its source network (Policy). Owners adds the optional ownership of
// broker names by certificate identity, which closes route hijacks among
// peers that all hold the broker role. docs/security.md describes the
// model and every property.
package authz

import (
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
)

// Role is what a request needs from its sender.
type Role uint8

// The roles. A request code belongs to exactly one of them.
const (
	// Read is every request that changes nothing: routes, cluster info,
	// topic lists, KV and config reads.
	Read Role = iota + 1
	// Broker is what brokers send about themselves: registrations,
	// unregistrations, heartbeats and their other codes.
	Broker
	// Admin is what changes the NameServer's state on an operator's
	// behalf: KV writes and deletes, config updates, write permissions,
	// topic deletion.
	Admin
)

// Roles lists every role, in the order the properties and metrics name them.
var Roles = []Role{Read, Broker, Admin}

func (r Role) String() string {
	switch r {
	case Read:
		return "read"
	case Broker:
		return "broker"
	case Admin:
		return "admin"
	}
	return "none"
}

// Code is one request code the NameServer answers: its protocol name and
// the role a sender needs.
type Code struct {
	Code int32
	Name string
	Role Role
}

// Codes is the one definition of the request codes the NameServer answers
// (docs/protocol.md#request-codes) and of the role each needs. A code the
// processor answers must be listed here (its tests check both ways), so a
// new code cannot slip in without a role.
//
// REGISTER_TOPIC_IN_NAMESRV (217) is a broker's code, not an admin's:
// 5.1.4+ brokers send it for their own topics (enableSingleTopicRegister),
// and granting them admin for it would also let them write KV, wipe write
// permissions and change the configuration.
var Codes = []Code{
	{protocol.PutKVConfig, "PUT_KV_CONFIG", Admin},
	{protocol.GetKVConfig, "GET_KV_CONFIG", Read},
	{protocol.DeleteKVConfig, "DELETE_KV_CONFIG", Admin},
	{protocol.RegisterBroker, "REGISTER_BROKER", Broker},
	{protocol.UnregisterBroker, "UNREGISTER_BROKER", Broker},
	{protocol.GetRouteInfoByTopic, "GET_ROUTEINFO_BY_TOPIC", Read},
	{protocol.GetBrokerClusterInfo, "GET_BROKER_CLUSTER_INFO", Read},
	{protocol.WipeWritePermOfBroker, "WIPE_WRITE_PERM_OF_BROKER", Admin},
	{protocol.GetAllTopicListFromNameserver, "GET_ALL_TOPIC_LIST_FROM_NAMESERVER", Read},
	{protocol.DeleteTopicInNamesrv, "DELETE_TOPIC_IN_NAMESRV", Admin},
	{protocol.RegisterTopicInNamesrv, "REGISTER_TOPIC_IN_NAMESRV", Broker},
	{protocol.GetKVListByNamespace, "GET_KVLIST_BY_NAMESPACE", Read},
	{protocol.GetTopicsByCluster, "GET_TOPICS_BY_CLUSTER", Read},
	{protocol.GetSystemTopicListFromNS, "GET_SYSTEM_TOPIC_LIST_FROM_NS", Read},
	{protocol.GetUnitTopicList, "GET_UNIT_TOPIC_LIST", Read},
	{protocol.GetHasUnitSubTopicList, "GET_HAS_UNIT_SUB_TOPIC_LIST", Read},
	{protocol.GetHasUnitSubUnunitTopicList, "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST", Read},
	{protocol.UpdateNamesrvConfig, "UPDATE_NAMESRV_CONFIG", Admin},
	{protocol.GetNamesrvConfig, "GET_NAMESRV_CONFIG", Read},
	{protocol.QueryDataVersion, "QUERY_DATA_VERSION", Broker},
	{protocol.AddWritePermOfBroker, "ADD_WRITE_PERM_OF_BROKER", Admin},
	{protocol.GetBrokerMemberGroup, "GET_BROKER_MEMBER_GROUP", Broker},
	{protocol.BrokerHeartbeat, "BROKER_HEARTBEAT", Broker},
}

// maxIndexedCode bounds the array RoleOf looks codes up in; every code of
// Codes is below it (checked at init).
const maxIndexedCode = 1024

// byCode indexes Codes for the request path: an array load, no hashing.
var byCode = func() (t [maxIndexedCode]*Code) {
	for i := range Codes {
		c := &Codes[i]
		if c.Code < 0 || c.Code >= maxIndexedCode || t[c.Code] != nil || c.Role == 0 || c.Name == "" {
			panic("authz: bad or duplicate entry in Codes: " + c.Name)
		}
		t[c.Code] = c
	}
	return t
}()

// Lookup returns the entry of a code the NameServer answers.
func Lookup(code int32) (*Code, bool) {
	if code < 0 || code >= maxIndexedCode || byCode[code] == nil {
		return nil, false
	}
	return byCode[code], true
}

// RoleOf is the role a request code needs. Codes the NameServer does not
// answer need Read: their answer (REQUEST_CODE_NOT_SUPPORTED) changes
// nothing but should not be given to a peer with no role at all.
func RoleOf(code int32) Role {
	if code >= 0 && code < maxIndexedCode {
		if c := byCode[code]; c != nil {
			return c.Role
		}
	}
	return Read
}

// Grants is the set of roles a peer holds. Holding Broker or Admin implies
// Read: every writer also reads routes.
type Grants uint8

// Has reports whether the grants include role.
func (g Grants) Has(r Role) bool { return g&(1<<r) != 0 }

// grant returns g with r and what r implies.
func (g Grants) grant(r Role) Grants { return g | 1<<r | 1<<Read }

// All holds every role: the NameServer's own probe connections, and every
// peer while authorization is off.
const All Grants = 1<<Read | 1<<Broker | 1<<Admin

// String lists the roles, "none" when empty.
func (g Grants) String() string {
	s := ""
	for _, r := range Roles {
		if g.Has(r) {
			if s != "" {
				s += ","
			}
			s += r.String()
		}
	}
	if s == "" {
		return "none"
	}
	return s
}
