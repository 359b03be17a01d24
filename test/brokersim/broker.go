// Package brokersim simulates a RocketMQ broker for tests: it registers
// with NameServers exactly as a Java broker does (REGISTER_BROKER with a
// JSON or zlib body and CRC32, heartbeats, UNREGISTER_BROKER), keeping one
// connection per NameServer so that closing it looks like a broker crash,
// and it answers the few client requests that producers and admin tools send
// to a broker (send message, client heartbeat, delete topic), so that real
// clients can be pointed at it.
package brokersim

import (
	"context"
	"crypto/tls"
	"fmt"
	"hash/crc32"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
)

// Config describes a simulated broker.
type Config struct {
	Cluster string
	Name    string
	ID      int64
	// Listen is where the broker serves clients; its address is what it
	// registers as brokerAddr. Default "127.0.0.1:0".
	Listen string
	// Generation selects 4.9.x or 5.x request fields and body shapes.
	Generation body.BrokerGeneration
	// Compressed sends zlib bodies (a 4.9 broker says so in the header, a
	// 5.x broker does not: docs/protocol.md#register-body-compressed).
	Compressed bool
	// Type is the header encoding of its requests.
	Type   remoting.SerializeType
	Topics []body.TopicConfig
	// HeartbeatTimeoutMillis is sent by 5.x brokers in acting-master mode.
	HeartbeatTimeoutMillis int64
	// TLS, when set, connects to NameServers over TLS, presenting its
	// Certificates as the broker's client certificate (a Java broker's
	// tls.enable and tls.client.* properties).
	TLS    *tls.Config
	Logger *slog.Logger
}

// Message is one message a producer sent to the broker.
type Message struct {
	Topic   string
	QueueID int
}

// Broker is a running simulated broker.
type Broker struct {
	cfg    Config
	addr   string
	server *remoting.Server
	served chan error

	mu       sync.Mutex
	dv       body.DataVersion
	topics   []body.TopicConfig
	conns    map[string]*remotingclient.Client
	received []Message
}

// Start listens for client traffic and returns the broker, not yet
// registered anywhere.
func Start(cfg Config) (*Broker, error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	l, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("broker %s listen: %w", cfg.Name, err)
	}
	b := &Broker{
		cfg:    cfg,
		addr:   l.Addr().String(),
		dv:     body.DataVersion{Counter: 1, Timestamp: time.Now().UnixMilli()},
		topics: slices.Clone(cfg.Topics),
		conns:  map[string]*remotingclient.Client{},
		served: make(chan error, 1),
	}
	b.server = remoting.NewServer(clientHandler{b}, remoting.Config{Logger: cfg.Logger})
	go func() { b.served <- b.server.Serve(l) }()
	return b, nil
}

// Addr is the broker's address, as registered.
func (b *Broker) Addr() string { return b.addr }

// Name is the broker name.
func (b *Broker) Name() string { return b.cfg.Name }

// Close unregisters nowhere: it drops every NameServer connection (which
// evicts the broker at once, like a crash) and stops serving clients.
func (b *Broker) Close() {
	b.DropConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = b.server.Shutdown(ctx) // past the deadline it closes what is left: nothing to do either way
	<-b.served                 //nolint:errcheck // waits for Serve to return, which after Shutdown is ErrServerClosed
}

// DropConnections closes the connections to every NameServer.
func (b *Broker) DropConnections() {
	b.mu.Lock()
	conns := b.conns
	b.conns = map[string]*remotingclient.Client{}
	b.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// SetTopics replaces the broker's topics and advances its DataVersion, as
// a topic change on a real broker does.
func (b *Broker) SetTopics(topics []body.TopicConfig) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.topics = slices.Clone(topics)
	b.dv.Counter++
	b.dv.Timestamp = time.Now().UnixMilli()
}

// Topics returns the broker's current topics.
func (b *Broker) Topics() []body.TopicConfig {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.topics)
}

// Received lists the messages producers sent to this broker.
func (b *Broker) Received() []Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.received)
}

func (b *Broker) conn(ctx context.Context, ns string) (*remotingclient.Client, error) {
	b.mu.Lock()
	c := b.conns[ns]
	b.mu.Unlock()
	if c != nil {
		select {
		case <-c.Done():
		default:
			return c, nil
		}
	}
	version := protocol.V4_9_8
	if b.cfg.Generation == body.Broker5 {
		version = protocol.V5_3_3
	}
	c, err := remotingclient.Dial(ctx, ns, remotingclient.Options{Type: b.cfg.Type, Version: version, TLS: b.cfg.TLS})
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	if old := b.conns[ns]; old != nil {
		old.Close()
	}
	b.conns[ns] = c
	b.mu.Unlock()
	return c, nil
}

// RegisterResult is one NameServer's answer to a registration.
type RegisterResult struct {
	NameServer string
	Response   *remotingclient.Response
	Err        error
}

// Register sends a full registration to every NameServer in parallel, as
// registerBrokerAll does, and returns each answer.
func (b *Broker) Register(ctx context.Context, nameServers []string) []RegisterResult {
	req, err := b.registration()
	out := make([]RegisterResult, len(nameServers))
	var wg sync.WaitGroup
	for i, ns := range nameServers {
		out[i].NameServer = ns
		if err != nil {
			out[i].Err = err
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := b.conn(ctx, ns)
			if err == nil {
				out[i].Response, err = c.Invoke(ctx, req)
			}
			out[i].Err = err
		}()
	}
	wg.Wait()
	return out
}

// RegisterOneway sends the registration as a oneway request, as 4.9
// brokers do after auto-creating a topic.
func (b *Broker) RegisterOneway(ctx context.Context, ns string) error {
	req, err := b.registration()
	if err != nil {
		return err
	}
	c, err := b.conn(ctx, ns)
	if err != nil {
		return err
	}
	return c.Oneway(req)
}

// Unregister sends UNREGISTER_BROKER to a NameServer.
func (b *Broker) Unregister(ctx context.Context, ns string) (*remotingclient.Response, error) {
	c, err := b.conn(ctx, ns)
	if err != nil {
		return nil, err
	}
	return c.Invoke(ctx, &remotingclient.Request{Code: protocol.UnregisterBroker, Ext: b.identity()})
}

// Invoke sends a request over the broker's connection to a NameServer
// (opening it if needed), as a broker's own route queries go over the
// connection it registers on.
func (b *Broker) Invoke(ctx context.Context, ns string, req *remotingclient.Request) (*remotingclient.Response, error) {
	c, err := b.conn(ctx, ns)
	if err != nil {
		return nil, err
	}
	return c.Invoke(ctx, req)
}

// Run registers with the list nameServers returns, every period, until ctx
// ends. Re-reading the list each round is how brokers follow an address
// server; NameServers that left the list get their connection closed.
func (b *Broker) Run(ctx context.Context, nameServers func() []string, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		list := nameServers()
		for _, r := range b.Register(ctx, list) {
			if r.Err != nil && ctx.Err() == nil {
				b.cfg.Logger.Warn("registration failed", "broker", b.cfg.Name, "nameserver", r.NameServer, "err", r.Err)
			}
		}
		b.mu.Lock()
		var gone []*remotingclient.Client
		for ns, c := range b.conns {
			if !slices.Contains(list, ns) {
				gone = append(gone, c)
				delete(b.conns, ns)
			}
		}
		b.mu.Unlock()
		for _, c := range gone {
			c.Close()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (b *Broker) identity() []remoting.Pair {
	return []remoting.Pair{
		{Key: "brokerName", Value: b.cfg.Name},
		{Key: "brokerAddr", Value: b.addr},
		{Key: "clusterName", Value: b.cfg.Cluster},
		{Key: "brokerId", Value: strconv.FormatInt(b.cfg.ID, 10)},
	}
}

// SetHeartbeatTimeout changes the heartbeatTimeoutMillis of the next 5.x
// registrations (0 leaves it out: the NameServer then waits 120 s). A test
// makes a broker that is about to go silent expire quickly this way.
func (b *Broker) SetHeartbeatTimeout(millis int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cfg.HeartbeatTimeoutMillis = millis
}

func (b *Broker) registration() (*remotingclient.Request, error) {
	b.mu.Lock()
	rb := &body.RegisterBody{DataVersion: b.dv, Topics: slices.Clone(b.topics), FilterServers: []string{}}
	heartbeatTimeout := b.cfg.HeartbeatTimeoutMillis
	b.mu.Unlock()
	data, err := body.EncodeRegisterBody(rb, b.cfg.Generation, b.cfg.Compressed)
	if err != nil {
		return nil, err
	}
	ext := append(b.identity(),
		remoting.Pair{Key: "haServerAddr", Value: haAddr(b.addr)},
		remoting.Pair{Key: "bodyCrc32", Value: strconv.FormatUint(uint64(crc32.ChecksumIEEE(data)&0x7FFFFFFF), 10)},
	)
	if b.cfg.Generation == body.Broker5 {
		// 5.x brokers always say compressed=false, even for zlib bodies.
		ext = append(ext, remoting.Pair{Key: "compressed", Value: "false"}, remoting.Pair{Key: "enableActingMaster", Value: "false"})
		if heartbeatTimeout > 0 {
			ext = append(ext, remoting.Pair{Key: "heartbeatTimeoutMillis", Value: strconv.FormatInt(heartbeatTimeout, 10)})
		}
	} else {
		ext = append(ext, remoting.Pair{Key: "compressed", Value: strconv.FormatBool(b.cfg.Compressed)})
	}
	return &remotingclient.Request{Code: protocol.RegisterBroker, Ext: ext, Body: data}, nil
}

// haAddr is the HA port Java derives: listen port + 1.
func haAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	p, _ := strconv.Atoi(port)
	return net.JoinHostPort(host, strconv.Itoa(p+1))
}

// Broker request codes the simulator answers for clients.
const (
	codeSendMessage       = 10
	codeHeartBeat         = 34
	codeUnregisterClient  = 35
	codeDeleteTopicBroker = 215
	codeSendMessageV2     = 310
	codeSendBatchMessage  = 320
)

// clientHandler answers what producers and admin tools send to a broker.
type clientHandler struct{ b *Broker }

func (h clientHandler) Serve(_ *remoting.Conn, req *remoting.Command, resp *remoting.Response) {
	b := h.b
	switch req.Code {
	case codeSendMessage, codeSendMessageV2, codeSendBatchMessage:
		topicKey, queueKey := "topic", "queueId"
		if req.Code != codeSendMessage {
			// SEND_MESSAGE_V2 abbreviates its field names.
			topicKey, queueKey = "b", "e"
		}
		topic, _ := req.ExtValue(topicKey)
		q, _ := req.ExtValue(queueKey)
		queue, _ := strconv.Atoi(string(q))
		b.mu.Lock()
		b.received = append(b.received, Message{Topic: string(topic), QueueID: queue})
		offset := len(b.received)
		b.mu.Unlock()
		resp.SetExt("msgId", fmt.Sprintf("%016X", offset))
		resp.SetExt("queueId", strconv.Itoa(queue))
		resp.SetExt("queueOffset", strconv.Itoa(offset))
	case codeHeartBeat, codeUnregisterClient:
	case codeDeleteTopicBroker:
		topic, _ := req.ExtValue("topic")
		b.mu.Lock()
		b.topics = slices.DeleteFunc(b.topics, func(tc body.TopicConfig) bool { return string(tc.Name) == string(topic) })
		b.dv.Counter++
		b.mu.Unlock()
	default:
		resp.Fail(protocol.RequestCodeNotSupported, "not simulated")
	}
}

func (clientHandler) Closed(*remoting.Conn) {}

// Topic is a read-write topic config with the given queue count.
func Topic(name string, queues int32) body.TopicConfig {
	return body.TopicConfig{Name: []byte(name), ReadQueueNums: queues, WriteQueueNums: queues, Perm: protocol.PermRead | protocol.PermWrite}
}
