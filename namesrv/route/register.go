package route

import (
	"fmt"
	"hash/maphash"
	"slices"

	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
)

// Registration is one REGISTER_BROKER request.
type Registration struct {
	Cluster      string
	BrokerAddr   string
	BrokerName   string
	BrokerID     int64
	HAServerAddr string
	ZoneName     string
	// HeartbeatTimeoutMillis is the 5.x per-broker expiry; 0 means the
	// default of 120 s.
	HeartbeatTimeoutMillis int64
	// Modern is true when the request carried enableActingMaster, which
	// only 5.x brokers send; ActingMaster is its value.
	Modern       bool
	ActingMaster bool
	Body         *body.RegisterBody
	Channel      Channel
	// Fingerprint identifies the request's body bytes together with
	// everything that decides how they decode and whether they passed
	// their checksum (0: not given). A registration that repeats the
	// previous one of its address byte for byte can then be applied by
	// Reregister without its body.
	Fingerprint uint64
}

// RegisterResult is what the registrant is told.
type RegisterResult struct {
	// Refused is set for a first registration carrying a single topic,
	// which 5.x refuses (docs/protocol.md#first-registration): "register
	// broker failed".
	Refused bool
	// MasterAddr and HAServerAddr are set for a slave whose master is live.
	MasterAddr   string
	HAServerAddr string
}

// Register applies a broker registration (docs/protocol.md#registration).
// Once the writers' lock is
// released, Options.OnRegister hears of a registration that left the broker
// live.
func (t *Table) Register(r *Registration) RegisterResult {
	res, live := t.register(r)
	if live && t.opts.OnRegister != nil {
		t.opts.OnRegister(r.Cluster, r.BrokerAddr)
	}
	return res
}

// pendingRegistration is a registration waiting for the writers' lock.
type pendingRegistration struct {
	r    *Registration
	res  RegisterResult
	live bool
	// failed is what a panic while applying its batch recovered; the
	// registrant re-raises it, as if its own registration had failed.
	failed any
	done   chan struct{}
}

// register applies r together with the registrations queued while it
// waited for the writers' lock, up to maxBatch in one write: whoever takes
// the lock applies the head of the queue and commits once. After a full
// restart every broker registers at once; a topic that many broker groups
// serve then gets one new view per batch instead of one per registration
// (1,000 groups of the same 1,000 topics: 5-6 s of CPU instead of 17-21 s).
func (t *Table) register(r *Registration) (RegisterResult, bool) {
	p := &pendingRegistration{r: r, done: make(chan struct{})}
	t.queueMu.Lock()
	t.queue = append(t.queue, p)
	t.queueMu.Unlock()
	t.applyQueued()
	<-p.done
	if p.failed != nil {
		panic(p.failed)
	}
	return p.res, p.live
}

// maxBatch bounds a batch, so that the registrations at its head are not
// held back for long behind the ones at its tail.
const maxBatch = 16

// applyQueued applies the registrations queued so far, if another caller
// has not already, and releases their registrants once the write is
// committed (or has failed).
func (t *Table) applyQueued() {
	var batch []*pendingRegistration
	defer func() {
		failed := recover()
		for _, q := range batch {
			if failed != nil {
				q.failed = fmt.Errorf("registration of broker %s at %s not applied: %v", q.r.BrokerName, q.r.BrokerAddr, failed)
			}
			close(q.done)
		}
		if failed != nil {
			panic(failed)
		}
	}()
	t.writeWork(func(c *changes) {
		t.queueMu.Lock()
		n := min(len(t.queue), maxBatch)
		batch = t.queue[:n:n]
		t.queue = t.queue[n:]
		t.queueMu.Unlock()
		for _, q := range batch {
			q.res, q.live = t.applyRegistration(c, q.r)
		}
	})
}

// applyRegistration is RouteInfoManager.registerBroker under the writers'
// lock.
func (t *Table) applyRegistration(c *changes, r *Registration) (_ RegisterResult, live bool) {
	t.stats.registrations.Add(1)

	names := t.clusters[r.Cluster]
	newCluster := names == nil
	if newCluster {
		names = map[string]struct{}{}
		t.clusters[r.Cluster] = names
	}
	_, wasMember := names[r.BrokerName]
	names[r.BrokerName] = struct{}{}

	b := t.brokers[r.BrokerName]
	registerFirst := b == nil
	if registerFirst {
		b = &brokerState{cluster: r.Cluster, name: r.BrokerName, addrs: map[int64]string{}}
		t.brokers[r.BrokerName] = b
	}
	acting := r.Modern && r.ActingMaster
	if b.modern != r.Modern || b.actingMaster != acting || b.zone != r.ZoneName || registerFirst || !wasMember {
		b.modern, b.actingMaster, b.zone = r.Modern, acting, r.ZoneName
		t.touchBroker(c, r.BrokerName)
	}

	// A slave promoted to master re-registers its address under a new id.
	for id, addr := range b.addrs {
		if addr == r.BrokerAddr && id != r.BrokerID {
			delete(b.addrs, id)
			t.touchBroker(c, r.BrokerName)
		}
	}

	dv := r.Body.DataVersion
	if old, ok := b.addrs[r.BrokerID]; ok && old != r.BrokerAddr {
		// Controller mode: a fresher member already holds this id.
		if li := t.live[liveKey{r.Cluster, old}]; li != nil && li.dataVersion.StateVersion > dv.StateVersion {
			t.log.Warn("refusing a registration older than the broker holding its id",
				"broker", r.BrokerName, "id", r.BrokerID, "addr", r.BrokerAddr, "holder", old)
			delete(t.live, liveKey{r.Cluster, r.BrokerAddr})
			return RegisterResult{}, false
		}
	}

	if _, ok := b.addrs[r.BrokerID]; !ok && r.Modern && len(r.Body.Topics) == 1 {
		// A 5.x broker's incremental single-topic registration must not
		// be its first (4.9 NameServers accept it, and so do we from 4.x
		// brokers). Unlike Java, undo the empty group it would leave.
		if len(b.addrs) == 0 {
			delete(t.brokers, r.BrokerName)
			if !wasMember {
				delete(names, r.BrokerName)
			}
			if newCluster {
				delete(t.clusters, r.Cluster)
			}
		}
		return RegisterResult{Refused: true}, false
	}

	if old := b.addrs[r.BrokerID]; old != r.BrokerAddr {
		b.addrs[r.BrokerID] = r.BrokerAddr
		registerFirst = registerFirst || old == ""
		t.touchBroker(c, r.BrokerName)
	}

	key := liveKey{r.Cluster, r.BrokerAddr}
	prev := t.live[key]
	versionChanged := prev == nil || prev.dataVersion != dv

	isMaster := r.BrokerID == 0
	minID, _ := b.minID()
	isPrimeSlave := r.Modern && !isMaster && r.BrokerID == minID
	var known []knownTopic
	if isMaster || isPrimeSlave {
		known = t.applyTopics(c, r, b, prev, isPrimeSlave, registerFirst, versionChanged)
	}

	timeout := r.HeartbeatTimeoutMillis
	if timeout <= 0 {
		timeout = protocol.DefaultBrokerExpiryMillis
	}
	now := t.nowMillis()
	registeredAt := now
	if prev != nil {
		registeredAt = prev.registeredAt
	}
	t.live[key] = &liveInfo{
		registeredAt: registeredAt,
		lastUpdate:   now,
		timeout:      timeout,
		dataVersion:  dv,
		channel:      r.Channel,
		haServerAddr: r.HAServerAddr,
		brokerName:   r.BrokerName,
		brokerID:     r.BrokerID,
		fingerprint:  r.Fingerprint,
		topicsGen:    b.topicsGen,
		wroteTopics:  isMaster || isPrimeSlave,
		pruned:       t.opts.DeleteTopicWithBrokerRegistration,
		known:        known,
	}

	if fs := r.Body.FilterServers; fs != nil {
		old, had := t.filters[key]
		switch {
		case len(fs) == 0 && had:
			delete(t.filters, key)
			t.touchBroker(c, r.BrokerName)
		case len(fs) > 0 && !equalStrings(old, fs):
			t.filters[key] = fs
			t.touchBroker(c, r.BrokerName)
		}
	}

	return t.registerResult(r, b), true
}

// registerResult tells a slave where its live master is.
func (t *Table) registerResult(r *Registration, b *brokerState) RegisterResult {
	var res RegisterResult
	if r.BrokerID != 0 {
		if master, ok := b.addrs[0]; ok {
			if li := t.live[liveKey{r.Cluster, master}]; li != nil {
				res.MasterAddr, res.HAServerAddr = master, li.haServerAddr
			}
		}
	}
	return res
}

// Reregister applies a registration that repeats, byte for byte
// (r.Fingerprint), the last one fully applied from the same address, when
// nothing that registration decided has changed since: the broker group's
// membership and flags, its role, and, for a broker that writes topics,
// every queue data of its broker name. Such a registration would change
// nothing but the address's liveness (RouteInfoManager.registerBroker
// with an unchanged DataVersion re-adds only missing topics, and none
// is missing), so r.Body is not needed and no view is rebuilt. It
// reports false, having changed nothing, when it cannot tell; the caller
// then decodes the body and calls Register.
func (t *Table) Reregister(r *Registration) (RegisterResult, bool) {
	if r.Fingerprint == 0 {
		return RegisterResult{}, false
	}
	var res RegisterResult
	var ok bool
	t.write(func(*changes) { res, ok = t.applyRepeat(r) })
	if ok && t.opts.OnRegister != nil {
		t.opts.OnRegister(r.Cluster, r.BrokerAddr)
	}
	return res, ok
}

func (t *Table) applyRepeat(r *Registration) (RegisterResult, bool) {
	li := t.live[liveKey{r.Cluster, r.BrokerAddr}]
	if li == nil || li.fingerprint != r.Fingerprint || li.brokerName != r.BrokerName || li.brokerID != r.BrokerID {
		return RegisterResult{}, false
	}
	b := t.brokers[r.BrokerName]
	if b == nil || b.cluster != r.Cluster || b.addrs[r.BrokerID] != r.BrokerAddr ||
		b.modern != r.Modern || b.actingMaster != (r.Modern && r.ActingMaster) || b.zone != r.ZoneName {
		return RegisterResult{}, false
	}
	if _, member := t.clusters[r.Cluster][r.BrokerName]; !member {
		return RegisterResult{}, false
	}
	minID, _ := b.minID()
	writesTopics := r.BrokerID == 0 || r.Modern && r.BrokerID == minID
	if writesTopics != li.wroteTopics {
		return RegisterResult{}, false
	}
	if writesTopics && (li.topicsGen != b.topicsGen || li.pruned != t.opts.DeleteTopicWithBrokerRegistration) {
		return RegisterResult{}, false
	}
	t.stats.registrations.Add(1)
	t.stats.unchanged.Add(1)
	timeout := r.HeartbeatTimeoutMillis
	if timeout <= 0 {
		timeout = protocol.DefaultBrokerExpiryMillis
	}
	li.lastUpdate = t.nowMillis()
	li.timeout = timeout
	li.channel = r.Channel
	li.haServerAddr = r.HAServerAddr
	return t.registerResult(r, b), true
}

// applyTopics is docs/protocol.md#registration-topics: a master (or a 5.x
// prime slave) writes its topics' queue data. prev is the address's
// previous registration, if any; it returns what the next one needs to
// know of this one (see knownTopic).
func (t *Table) applyTopics(c *changes, r *Registration, b *brokerState, prev *liveInfo, primeSlave, first, versionChanged bool) []knownTopic {
	topics := r.Body.Topics
	var known []knownTopic
	if prev != nil && !first && prev.brokerName == r.BrokerName && prev.topicsGen == b.topicsGen {
		known = prev.known
	}
	if t.opts.DeleteTopicWithBrokerRegistration && len(r.Body.Mappings) == 0 {
		keep := make(map[string]struct{}, len(topics))
		for _, tc := range topics {
			keep[string(tc.Name)] = struct{}{}
		}
		for name := range t.brokerTopics[r.BrokerName] {
			if _, ok := keep[name]; !ok {
				t.removeQueue(c, name, r.BrokerName)
			}
		}
	}
	if first && t.brokerTopics[r.BrokerName] == nil {
		// A broker's first registration brings mostly new topics: size
		// the set that will hold them once rather than regrow it.
		t.brokerTopics[r.BrokerName] = make(map[string]struct{}, len(topics))
	}
	w := newKnownWriter(known, len(topics))
	sameVersion := !first && !versionChanged
	dropWrite := primeSlave && b.actingMaster
	t.seq++
	skew := 0
	for i := range topics {
		tc := &topics[i]
		k := knownTopic{
			hash:  maphash.Bytes(t.seed, tc.Name),
			read:  tc.ReadQueueNums,
			write: tc.WriteQueueNums,
			perm:  tc.Perm,
			flag:  tc.TopicSysFlag,
		}
		if dropWrite {
			k.perm &^= protocol.PermWrite
		}
		at := w.find(i+skew, k.hash)
		if at >= 0 {
			skew = at - i
			// Unchanged, or with the same DataVersion already there (only
			// topics the broker lacks are added, which is what lets split
			// registrations and wiped write permissions survive heartbeats,
			// docs/protocol.md#write-perm): nothing to write, unless an
			// earlier topic of this body had the same name.
			if (sameVersion || known[at] == k) && !slices.Contains(w.slow, k.hash) {
				w.keep(i, at)
				continue
			}
		}
		tp := t.index.Load().find(k.hash, tc.Name)
		q := body.QueueData{BrokerName: r.BrokerName, ReadQueueNums: k.read, WriteQueueNums: k.write, Perm: k.perm, TopicSysFlag: k.flag}
		switch {
		case tp == nil:
			tp = t.newTopic(k.hash, string(tc.Name))
			t.putTopicQueue(c, tp, q)
		case sameVersion:
			if j, ok := findQueue(c.queues(tp), r.BrokerName); ok {
				q = c.queues(tp)[j]
			} else {
				t.putTopicQueue(c, tp, q)
			}
		default:
			t.putTopicQueue(c, tp, q)
		}
		k.read, k.write, k.perm, k.flag = q.ReadQueueNums, q.WriteQueueNums, q.Perm, q.TopicSysFlag
		if tp.seen == t.seq {
			w.dup = true
		}
		tp.seen = t.seq
		w.slowTopic(i, at, k)
	}
	if !sameVersion {
		for i := range r.Body.Mappings {
			m := &r.Body.Mappings[i]
			byBroker := t.mappings[m.Topic]
			if byBroker == nil {
				byBroker = map[string]*fjson.Value{}
				t.mappings[m.Topic] = byBroker
			}
			byBroker[m.BrokerName] = &m.Info
			if tp := c.lookup(t, m.Topic); tp != nil {
				c.touch(tp)
			}
		}
	}
	if w.dup {
		return nil
	}
	return w.out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
