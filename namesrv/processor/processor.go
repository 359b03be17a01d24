// Package processor answers NameServer requests: it checks that the peer
// holds the role the request code needs (when authorization is on), reads
// each request code's header fields and body, applies it to the route
// table, the KV store or the live configuration, and fills in the answer
// the Java NameServer would give (docs/protocol.md#request-codes; choices
// where Java has none in docs/compatibility.md; authorization in
// docs/security.md).
package processor

import (
	"context"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/maphash"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/authz"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
	"github.com/kube-namesrv/kube-namesrv/namesrv/gate"
	"github.com/kube-namesrv/kube-namesrv/namesrv/header"
	"github.com/kube-namesrv/kube-namesrv/namesrv/kvconfig"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/namesrv/route"
)

// Options wire a Processor to the state it serves.
type Options struct {
	Routes *route.Table
	KV     *kvconfig.Store
	Config *config.Store
	Logger *slog.Logger
	// Started is when the server started, for needWaitForService.
	Started time.Time
	// Gate is the start-up route gate; nil is always open.
	Gate *gate.Gate
	// Policy authorizes every request by the role its code needs; nil
	// serves every peer everything, as Java does.
	Policy *authz.Policy
	// Owners, when set, refuses registrations, unregistrations and topic
	// registrations of a broker name owned by another identity.
	Owners *authz.Owners
	// Refusals hears of refused requests, for metrics; nil: nobody.
	Refusals Refusals
}

// Refusals counts refused requests.
type Refusals interface {
	// AuthzRefused: the peer lacked role, which code needs.
	AuthzRefused(code int32, role authz.Role)
	// OwnershipRefused: the peer acted on a broker name another identity
	// owns.
	OwnershipRefused(code int32)
}

type noRefusals struct{}

func (noRefusals) AuthzRefused(int32, authz.Role) {}

func (noRefusals) OwnershipRefused(int32) {}

// Processor is a remoting.Handler for every NameServer request code.
type Processor struct {
	routes  *route.Table
	kv      *kvconfig.Store
	cfg     *config.Store
	log     *slog.Logger
	started time.Time
	gate    *gate.Gate
	policy  *authz.Policy
	owners  *authz.Owners
	refused Refusals
	// draining is set once the server shuts down: connections then close
	// one after another, and evicting the brokers of the first ones would
	// make the requests still being answered on the others miss routes.
	draining atomic.Bool
}

// Drain stops evicting brokers whose connection closes: the NameServer is
// going away, and its clients must get full answers until it is gone.
func (p *Processor) Drain() { p.draining.Store(true) }

// New returns a Processor.
func New(o Options) *Processor {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Refusals == nil {
		o.Refusals = noRefusals{}
	}
	return &Processor{
		routes:  o.Routes,
		kv:      o.KV,
		cfg:     o.Config,
		log:     o.Logger,
		started: o.Started,
		gate:    o.Gate,
		policy:  o.Policy,
		owners:  o.Owners,
		refused: o.Refusals,
	}
}

// Remarks the Java NameServer sends, kept verbatim.
const (
	remarkNoRoutePrefix = "No topic route info in name server for the topic: "
	remarkNoRouteSuffix = "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
	remarkDisabled      = "disable"
	remarkCRC           = "crc32 not match"
	remarkRegisterFail  = "register broker failed"
	remarkNotReady      = "name server not ready"
	remarkKVNull        = "namespace or key is null"
	remarkBlackList     = "Can not update config in black list."
	remarkProperties    = "string2Properties error"
)

// conn is what the processor uses of a connection: *remoting.Conn, whose
// closing (as a route.Channel) cuts off an expired broker.
type conn interface {
	route.Channel
	RemoteAddr() string
	// Mark and Marked remember that the connection carried a broker's
	// request.
	Mark()
	Marked() bool
	// Who the peer is, for authorization.
	PeerAddr() netip.AddrPort
	PeerCertificate() *x509.Certificate
	Internal() bool
	// Tag caches the peer's grants (see authorized).
	Tag() uint64
	SetTag(uint64)
}

// Serve implements remoting.Handler.
func (p *Processor) Serve(c *remoting.Conn, req *remoting.Command, resp *remoting.Response) {
	p.serve(c, req, resp)
}

func (p *Processor) serve(c conn, req *remoting.Command, resp *remoting.Response) {
	if p.policy != nil && !permits(c.Tag(), req.Code) && !p.authorized(c, req, resp) {
		return
	}
	var err error
	switch req.Code {
	case protocol.GetRouteInfoByTopic:
		if p.gated(c, req, resp) {
			return
		}
		p.routeInfo(req, resp)
		return
	case protocol.RegisterBroker:
		c.Mark()
		err = p.registerBroker(c, req, resp)
	case protocol.UnregisterBroker:
		c.Mark()
		err = p.unregisterBroker(c, req, resp)
	case protocol.GetBrokerClusterInfo:
		resp.Body = p.routes.ClusterInfo()
	case protocol.QueryDataVersion:
		c.Mark()
		err = p.queryDataVersion(req, resp)
	case protocol.BrokerHeartbeat:
		c.Mark()
		err = p.brokerHeartbeat(req)
	case protocol.GetBrokerMemberGroup:
		c.Mark()
		err = p.brokerMemberGroup(req, resp)
	case protocol.RegisterTopicInNamesrv:
		c.Mark()
		err = p.registerTopic(c, req, resp)
	case protocol.PutKVConfig:
		err = p.putKV(req, resp)
	case protocol.GetKVConfig:
		if p.gated(c, req, resp) {
			return
		}
		p.getKV(req, resp)
	case protocol.DeleteKVConfig:
		err = p.deleteKV(req)
	case protocol.GetKVListByNamespace:
		p.kvList(req, resp)
	case protocol.WipeWritePermOfBroker, protocol.AddWritePermOfBroker:
		err = p.writePerm(req, resp)
	case protocol.GetAllTopicListFromNameserver:
		if !p.cfg.Load().EnableAllTopicList {
			resp.Fail(protocol.SystemError, remarkDisabled)
			return
		}
		resp.Body = body.AppendTopicList(nil, &body.TopicList{Topics: p.routes.AllTopics()})
	case protocol.DeleteTopicInNamesrv:
		err = p.deleteTopic(req)
	case protocol.GetTopicsByCluster:
		if !p.cfg.Load().EnableTopicList {
			resp.Fail(protocol.SystemError, remarkDisabled)
			return
		}
		var h header.GetTopicsByCluster
		h.Decode(req)
		resp.Body = body.AppendTopicList(nil, &body.TopicList{Topics: p.routes.TopicsByCluster(h.Cluster)})
	case protocol.GetSystemTopicListFromNS:
		topics, addr := p.routes.SystemTopics()
		resp.Body = body.AppendTopicList(nil, &body.TopicList{Topics: topics, BrokerAddr: addr})
	case protocol.GetUnitTopicList, protocol.GetHasUnitSubTopicList, protocol.GetHasUnitSubUnunitTopicList:
		if !p.cfg.Load().EnableTopicList {
			resp.Fail(protocol.SystemError, remarkDisabled)
			return
		}
		resp.Body = body.AppendTopicList(nil, &body.TopicList{Topics: p.routes.UnitTopics(unitFilter(req.Code))})
	case protocol.UpdateNamesrvConfig:
		p.updateConfig(req, resp)
	case protocol.GetNamesrvConfig:
		resp.Body = p.cfg.Text()
	default:
		// 5.x answers unknown codes; 4.9 stays silent and lets the caller
		// time out, which helps nobody.
		resp.Fail(protocol.RequestCodeNotSupported, " request type "+strconv.Itoa(int(req.Code))+" not supported")
		return
	}
	if err != nil {
		var bad *header.Error
		if !errors.As(err, &bad) {
			p.log.Warn("request failed", "code", req.Code, "remote", c.RemoteAddr(), "err", err)
		}
		// Java answers an exception without the header class's fields.
		resp.HasExt, resp.Ext = false, resp.Ext[:0]
		resp.Fail(protocol.SystemError, err.Error())
	}
}

// The connection's tag: its grants in the low byte, once known.
const (
	tagGrantsKnown   uint64 = 1 << 63
	tagRefusalLogged uint64 = 1 << 62
	tagGrants        uint64 = 0xFF
)

// permits is the route path's check, small enough to be inlined: whether
// a connection's tag already holds the grants for code. The peer's grants
// are worked out on its first request (authorized) and kept in the tag, so
// every later request costs a load, an array lookup and a bit test.
func permits(tag uint64, code int32) bool {
	return tag&tagGrantsKnown != 0 && authz.Grants(tag&tagGrants).Has(authz.RoleOf(code))
}

// authorized is the rest of the check, for what permits did not let
// through: it works out the peer's grants on its first request, and
// answers NO_PERMISSION when the peer lacks the role the request's code
// needs. The connection keeps working: a Java client sees an ordinary
// failed call.
func (p *Processor) authorized(c conn, req *remoting.Command, resp *remoting.Response) bool {
	tag := c.Tag()
	if tag&tagGrantsKnown == 0 {
		tag = p.grants(c)
		c.SetTag(tag)
	}
	role := authz.RoleOf(req.Code)
	if authz.Grants(tag & tagGrants).Has(role) {
		return true
	}
	p.refuse(c, tag, req.Code, role, resp)
	return false
}

func (p *Processor) grants(c conn) uint64 {
	g := authz.All
	if !c.Internal() {
		g = p.policy.Grants(c.PeerAddr().Addr(), c.PeerCertificate())
	}
	return tagGrantsKnown | uint64(g)
}

// refuse answers NO_PERMISSION naming the role the code needs. The first
// refusal on a connection is logged at Warn, later ones at Debug, so a
// misconfigured client cannot flood the log.
func (p *Processor) refuse(c conn, tag uint64, code int32, role authz.Role, resp *remoting.Response) {
	p.refused.AuthzRefused(code, role)
	name := "code " + strconv.Itoa(int(code))
	if e, ok := authz.Lookup(code); ok {
		name = e.Name
	}
	who := peerName(c)
	held := authz.Grants(tag & tagGrants)
	level := slog.LevelDebug
	if tag&tagRefusalLogged == 0 {
		c.SetTag(tag | tagRefusalLogged)
		level = slog.LevelWarn
	}
	p.log.Log(context.Background(), level, "request refused: the peer lacks the role", "code", code, "request", name,
		"role", role.String(), "remote", c.RemoteAddr(), "identity", who, "grants", held.String())
	resp.HasExt, resp.Ext = false, resp.Ext[:0]
	resp.Fail(protocol.NoPermission, fmt.Sprintf("no permission: %s (%d) needs the %s role, which %s at %s does not hold (it holds: %s)",
		name, code, role, who, c.PeerAddr().Addr(), held))
}

// peerName names the peer by its certificate identity, for logs and
// refusals.
func peerName(c conn) string {
	if id := authz.Identity(c.PeerCertificate()); id != "" {
		return "client certificate " + id
	}
	return "a peer without a client certificate"
}

// owned checks the broker-name ownership of names for the peer (claiming
// free names when claim is set) and answers NO_PERMISSION when another
// identity owns one. It returns the held names, to be unlocked once the
// request's change is applied, or nil when refused (already unlocked).
func (p *Processor) owned(c conn, code int32, claim bool, resp *remoting.Response, names ...string) *authz.Held {
	held := p.owners.Lock(names...)
	id := authz.Identity(c.PeerCertificate())
	a := held.Admit(id, claim)
	if a.OK {
		if a.Claimed {
			p.log.Info("broker name claimed", "broker", names[0], "owner", id, "remote", c.RemoteAddr())
		}
		return held
	}
	held.Unlock()
	p.refused.OwnershipRefused(code)
	p.log.Warn("request refused: broker name owned by another identity", "code", code, "broker", a.Name,
		"owner", a.Owner, "identity", id, "remote", c.RemoteAddr())
	resp.HasExt, resp.Ext = false, resp.Ext[:0]
	resp.Fail(protocol.NoPermission, fmt.Sprintf("no permission: broker name %s is registered by another identity; %s cannot act on it",
		a.Name, peerName(c)))
	return nil
}

func unitFilter(code int32) route.UnitFilter {
	switch code {
	case protocol.GetHasUnitSubTopicList:
		return route.HasUnitSub
	case protocol.GetHasUnitSubUnunitTopicList:
		return route.HasUnitSubOnly
	}
	return route.Unit
}

// gated refuses a client's route or KV read while the start-up route gate
// is closed: the connection is closed instead of answered, so the client
// asks another NameServer. Connections that carried a broker request
// (marked) are always served: closing one would evict its broker, and a
// broker's own route queries go over the connection it registers on.
func (p *Processor) gated(c conn, req *remoting.Command, resp *remoting.Response) bool {
	if !p.gate.Closed() || c.Marked() {
		return false
	}
	resp.Close = remoting.ClosedGated
	p.gate.Refused(c.RemoteAddr(), req.Code)
	return true
}

// Closed implements remoting.Handler: a broker whose registration
// connection closes is evicted at once (docs/protocol.md#closed-connections).
// Only connections that carried a broker request can be a registration's,
// so a client's disconnect does not take the table's writers' lock.
func (p *Processor) Closed(c *remoting.Conn) {
	if c.Marked() && !p.draining.Load() {
		p.routes.ChannelClosed(c)
	}
}

// routeInfo answers GET_ROUTEINFO_BY_TOPIC, the hot path: no allocation
// once the topic's body is cached.
func (p *Processor) routeInfo(req *remoting.Command, resp *remoting.Response) {
	cfg := p.cfg.Load()
	if cfg.NeedWaitForService && time.Since(p.started) < time.Duration(cfg.WaitSecondsForService)*time.Second {
		resp.Fail(protocol.SystemError, remarkNotReady)
		return
	}
	var h header.GetRouteInfo
	h.Decode(req)
	d := fjson.Legacy
	if req.Version >= protocol.V4_9_4 || h.AcceptStandardJSONOnly {
		d = fjson.Standard
	}
	if zone, ok := h.Zone(); ok {
		if rd, found := p.routes.RouteData(string(h.Topic)); found {
			filtered := filterByZone(rd, zone)
			resp.Body = body.AppendTopicRouteData(nil, &filtered, fjson.Legacy)
			return
		}
	} else if b, found := p.routes.Route(h.Topic, d); found {
		resp.Body = b
		return
	}
	resp.Code = protocol.TopicNotExist
	resp.Remark = append(resp.Remark[:0], remarkNoRoutePrefix...)
	if h.HasTopic {
		resp.Remark = append(resp.Remark, h.Topic...)
	} else {
		resp.Remark = append(resp.Remark, "null"...)
	}
	resp.Remark = append(resp.Remark, remarkNoRouteSuffix...)
}

func (p *Processor) registerBroker(c conn, req *remoting.Command, resp *remoting.Response) error {
	// Java builds the answer with its header class first, so every answer
	// to a registration, even a refusal, carries "extFields":{}.
	resp.HasExt = true
	var h header.RegisterBroker
	err := h.Decode(req)
	maxInflated := p.cfg.Load().MaxInflatedBodySize
	fp, bodyCRC := p.fingerprint(&h, req, maxInflated)
	// The checksum is checked first, as Java does: a body that fails it is
	// refused as such, whatever else is wrong with the header.
	if h.BodyCRC32 != 0 && int64(bodyCRC&0x7FFFFFFF) != h.BodyCRC32 {
		p.log.Warn("registration body fails its CRC32", "remote", c.RemoteAddr(), "expected", h.BodyCRC32)
		resp.Code, resp.Remark = protocol.SystemError, append(resp.Remark[:0], remarkCRC...)
		return nil
	}
	if err != nil {
		return err
	}
	if p.owners != nil {
		held := p.owned(c, req.Code, true, resp, h.BrokerName)
		if held == nil {
			return nil
		}
		// Held through the table change, so that no other identity can
		// take the name in between.
		defer held.Unlock()
	}
	r := route.Registration{
		Channel:                c,
		Cluster:                h.ClusterName,
		BrokerAddr:             h.BrokerAddr,
		BrokerName:             h.BrokerName,
		BrokerID:               h.BrokerID,
		HAServerAddr:           h.HAServerAddr,
		ZoneName:               h.ZoneName,
		HeartbeatTimeoutMillis: h.HeartbeatTimeoutMillis,
		Modern:                 h.Modern,
		ActingMaster:           h.EnableActingMaster,
		Fingerprint:            fp,
	}
	// Most registrations are a broker's periodic full re-registration
	// with nothing changed: recognised by their checksums, they skip the
	// decode.
	if res, ok := p.routes.Reregister(&r); ok {
		p.answerRegistration(&res, resp)
		return nil
	}
	if r.Body, err = p.decode(&h, req, maxInflated); err != nil {
		p.log.Warn("undecodable registration", "remote", c.RemoteAddr(), "broker", r.BrokerName, "addr", r.BrokerAddr, "err", err)
		return err
	}
	res := p.routes.Register(&r)
	// The table keeps nothing of the topic list (names are copied).
	r.Body.Release()
	if res.Refused {
		resp.Code, resp.Remark = protocol.SystemError, append(resp.Remark[:0], remarkRegisterFail...)
		return nil
	}
	p.answerRegistration(&res, resp)
	return nil
}

// fingerprint is the package's fingerprint as registration work: the
// checksums and the decode of a registration hold one of the table's work
// slots, which leave a CPU to route queries (route.Table.EnterWork), and
// never call the table while they do.
func (p *Processor) fingerprint(h *header.RegisterBroker, req *remoting.Command, maxInflated int) (uint64, uint32) {
	p.routes.EnterWork()
	defer p.routes.LeaveWork()
	return fingerprint(h, req, maxInflated)
}

// decode reads a registration body as registration work (see fingerprint).
func (p *Processor) decode(h *header.RegisterBroker, req *remoting.Command, maxInflated int) (*body.RegisterBody, error) {
	p.routes.EnterWork()
	defer p.routes.LeaveWork()
	return body.DecodeRegisterBody(req.Body, body.RegisterOptions{
		Compressed:  h.Compressed,
		Version:     req.Version,
		MaxInflated: maxInflated,
	})
}

// fingerprint identifies a registration's body together with everything
// that decides how it decodes (compressed flag, request version, inflate
// limit) and the checksum the header claims, so that equal fingerprints
// mean the same body would decode to the same result and pass the same
// check. It also returns the body's CRC32, which the check needs: both
// come from one pass over the body, which for a broker with many topics is
// megabytes, in blocks that stay in the cache between the two sums. The
// body's identity is its IEEE and Castagnoli CRC32s and its length: two
// independent 32-bit checksums, computed at memory speed by the CPU's
// carry-less multiply and CRC32 instructions.
func fingerprint(h *header.RegisterBroker, req *remoting.Command, maxInflated int) (fp uint64, bodyCRC uint32) {
	const block = 32 << 10
	var castagnoli uint32
	for b := req.Body; len(b) > 0; {
		n := min(block, len(b))
		bodyCRC = crc32.Update(bodyCRC, crc32.IEEETable, b[:n])
		castagnoli = crc32.Update(castagnoli, castagnoliTable, b[:n])
		b = b[n:]
	}
	var meta [37]byte
	binary.LittleEndian.PutUint32(meta[0:], bodyCRC)
	binary.LittleEndian.PutUint32(meta[4:], castagnoli)
	binary.LittleEndian.PutUint64(meta[8:], uint64(len(req.Body)))
	binary.LittleEndian.PutUint64(meta[16:], uint64(h.BodyCRC32))
	binary.LittleEndian.PutUint64(meta[24:], uint64(maxInflated))
	binary.LittleEndian.PutUint32(meta[32:], uint32(req.Version))
	if h.Compressed {
		meta[36] = 1
	}
	return maphash.Bytes(fingerprintSeed, meta[:]), bodyCRC
}

var (
	castagnoliTable = crc32.MakeTable(crc32.Castagnoli)
	// fingerprintSeed mixes the fingerprint's parts; fingerprints are
	// compared only within one process.
	fingerprintSeed = maphash.MakeSeed()
)

// answerRegistration fills the answer to an applied registration.
func (p *Processor) answerRegistration(res *route.RegisterResult, resp *remoting.Response) {
	if res.HAServerAddr != "" {
		resp.SetExt("haServerAddr", res.HAServerAddr)
	}
	if res.MasterAddr != "" {
		resp.SetExt("masterAddr", res.MasterAddr)
	}
	if p.cfg.Load().ReturnOrderTopicConfigToBroker {
		if table, ok := p.kv.KVTable(protocol.NamespaceOrderTopicConfig); ok {
			resp.Body = table
		}
	}
}

func (p *Processor) unregisterBroker(c conn, req *remoting.Command, resp *remoting.Response) error {
	var h header.UnregisterBroker
	if err := h.Decode(req); err != nil {
		return err
	}
	if p.owners != nil {
		held := p.owned(c, req.Code, false, resp, h.BrokerName)
		if held == nil {
			return nil
		}
		defer held.Unlock()
	}
	p.routes.Unregister(route.Unregistration{Cluster: h.ClusterName, BrokerAddr: h.BrokerAddr, BrokerName: h.BrokerName})
	return nil
}

func (p *Processor) queryDataVersion(req *remoting.Command, resp *remoting.Response) error {
	var h header.QueryDataVersion
	if err := h.Decode(req); err != nil {
		return err
	}
	dv, err := body.DecodeDataVersion(req.Body)
	if err != nil {
		return err
	}
	changed, stored, found := p.routes.QueryDataVersion(route.AddrKey{Cluster: h.ClusterName, Addr: h.BrokerAddr}, dv)
	resp.SetExt("changed", strconv.FormatBool(changed))
	if found {
		resp.Body = body.AppendDataVersion(nil, stored)
	}
	return nil
}

func (p *Processor) brokerHeartbeat(req *remoting.Command) error {
	var h header.BrokerHeartbeat
	if err := h.Decode(req); err != nil {
		return err
	}
	p.routes.Heartbeat(route.AddrKey{Cluster: h.ClusterName, Addr: h.BrokerAddr})
	return nil
}

func (p *Processor) brokerMemberGroup(req *remoting.Command, resp *remoting.Response) error {
	var h header.GetBrokerMemberGroup
	if err := h.Decode(req); err != nil {
		return err
	}
	resp.Body = body.AppendBrokerMemberGroup(nil, h.ClusterName, h.BrokerName, p.routes.MemberGroup(h.BrokerName))
	return nil
}

func (p *Processor) registerTopic(c conn, req *remoting.Command, resp *remoting.Response) error {
	var h header.RegisterTopic
	if err := h.Decode(req); err != nil {
		return err
	}
	if len(req.Body) == 0 {
		return nil
	}
	queues, err := body.DecodeQueueDatas(req.Body)
	if err != nil {
		return err
	}
	if p.owners != nil && len(queues) > 0 {
		names := make([]string, len(queues))
		for i, q := range queues {
			names[i] = q.BrokerName
		}
		held := p.owned(c, req.Code, false, resp, names...)
		if held == nil {
			return nil
		}
		defer held.Unlock()
	}
	p.routes.RegisterTopic(h.Topic, queues)
	return nil
}

func (p *Processor) writePerm(req *remoting.Command, resp *remoting.Response) error {
	var h header.WritePermOfBroker
	if err := h.Decode(req); err != nil {
		return err
	}
	if req.Code == protocol.WipeWritePermOfBroker {
		resp.SetExt("wipeTopicCount", strconv.Itoa(p.routes.WipeWritePerm(h.BrokerName)))
	} else {
		resp.SetExt("addTopicCount", strconv.Itoa(p.routes.AddWritePerm(h.BrokerName)))
	}
	return nil
}

func (p *Processor) deleteTopic(req *remoting.Command) error {
	var h header.DeleteTopicInNamesrv
	if err := h.Decode(req); err != nil {
		return err
	}
	p.routes.DeleteTopic(h.Topic, h.ClusterName)
	return nil
}

func (p *Processor) putKV(req *remoting.Command, resp *remoting.Response) error {
	var h header.PutKVConfig
	h.Decode(req)
	if !h.Namespace.Set || !h.Key.Set {
		resp.Fail(protocol.SystemError, remarkKVNull)
		return nil
	}
	var value *string
	if h.Value.Set {
		value = &h.Value.Value
	}
	return p.kv.Put(h.Namespace.Value, h.Key.Value, value)
}

func (p *Processor) getKV(req *remoting.Command, resp *remoting.Response) {
	var h header.GetKVConfig
	h.Decode(req)
	ns, key := h.Namespace.OrNull(), h.Key.OrNull()
	resp.HasExt = true
	if v, ok := p.kv.Get(ns, key); ok {
		resp.SetExt("value", v)
		return
	}
	resp.Code = protocol.QueryNotFound
	resp.Remark = fmt.Appendf(resp.Remark[:0], "No config item, Namespace: %s Key: %s", ns, key)
}

func (p *Processor) deleteKV(req *remoting.Command) error {
	var h header.DeleteKVConfig
	h.Decode(req)
	if !h.Namespace.Set || !h.Key.Set {
		return nil
	}
	return p.kv.Delete(h.Namespace.Value, h.Key.Value)
}

func (p *Processor) kvList(req *remoting.Command, resp *remoting.Response) {
	var h header.GetKVListByNamespace
	h.Decode(req)
	ns := h.Namespace.OrNull()
	if table, ok := p.kv.KVTable(ns); ok {
		resp.Body = table
		return
	}
	resp.Code = protocol.QueryNotFound
	resp.Remark = fmt.Appendf(resp.Remark[:0], "No config item, Namespace: %s", ns)
}

func (p *Processor) updateConfig(req *remoting.Command, resp *remoting.Response) {
	err := p.cfg.Update(req.Body)
	switch {
	case err == nil:
	case errors.Is(err, config.ErrBlackListed):
		resp.Fail(protocol.NoPermission, remarkBlackList)
	case errors.Is(err, config.ErrParse):
		resp.Fail(protocol.SystemError, remarkProperties)
	default:
		p.log.Warn("update namesrv config refused", "err", err)
		resp.Fail(protocol.SystemError, err.Error())
	}
}

// filterByZone keeps the broker groups of the requested zone, and groups
// without a master (so consumers can still read from a slave elsewhere),
// dropping the queues and filter servers of the rest.
func filterByZone(rd *body.TopicRouteData, zone string) body.TopicRouteData {
	out := *rd
	out.BrokerDatas, out.QueueDatas, out.FilterServers = nil, nil, nil
	removed := map[string]bool{}
	removedAddrs := map[string]bool{}
	for _, bd := range rd.BrokerDatas {
		if len(bd.Addrs) == 0 || bd.Addrs[0].ID != 0 || strings.EqualFold(bd.ZoneName, zone) {
			out.BrokerDatas = append(out.BrokerDatas, bd)
			continue
		}
		removed[bd.BrokerName] = true
		for _, a := range bd.Addrs {
			removedAddrs[a.Addr] = true
		}
	}
	for _, q := range rd.QueueDatas {
		if !removed[q.BrokerName] {
			out.QueueDatas = append(out.QueueDatas, q)
		}
	}
	for _, fs := range rd.FilterServers {
		if !removedAddrs[fs.BrokerAddr] {
			out.FilterServers = append(out.FilterServers, fs)
		}
	}
	return out
}
