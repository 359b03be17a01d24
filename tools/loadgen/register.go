package loadgen

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"sync"
	"time"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
)

// RegisterStorm is Brokers brokers, each with TopicsPerBroker topics,
// sending full registrations every Interval, as a real cluster's brokers do
// every 30 s (by default all at once, the worst case).
type RegisterStorm struct {
	Addr            string
	Brokers         int
	TopicsPerBroker int
	// SharedTopics makes every broker serve the same topic names (a
	// cluster of many broker groups); otherwise each has its own.
	SharedTopics bool
	Interval     time.Duration
	Compressed   bool
	// CompressAbove, when positive, sends zlib bodies for brokers whose
	// JSON body would be larger: what a broker too large for the server's
	// frameMaxLength must do (compressedRegister=true).
	CompressAbove int
	Generation    body.BrokerGeneration
	// Rounds bounds the registrations per broker (0: until ctx ends).
	Rounds int
	// Hold keeps each broker's connection open after its Rounds, until ctx
	// ends: the server unregisters a broker whose connection closes.
	Hold bool
	// OnRoundsDone, with Hold and Rounds, is called once every broker has
	// sent its Rounds registrations.
	OnRoundsDone func()
	// OnRegistered, when set, is called after each successful
	// registration in the broker's goroutine, before its next one: a
	// caller can read the server's usage between two registrations.
	// Returning false ends the broker's registrations as if its Rounds
	// were done.
	OnRegistered func(broker, round int) bool
	// NewVersion makes every registration carry a DataVersion other than
	// the previous one (two pre-encoded bodies alternate), so the server
	// re-applies the broker's topics instead of taking it as a heartbeat.
	NewVersion bool
	// ChangedTopics, when positive, makes the alternating bodies also
	// differ in the write queue count of that many topics (implies
	// NewVersion): the path of a broker whose few topics changed.
	ChangedTopics int
	// FirstBroker numbers the brokers from this index, so storms sent to
	// one server one after another use distinct names and addresses.
	FirstBroker int
	// Spread delays broker i's first registration by i*Spread/Brokers: a
	// cluster restarting within Spread instead of all at once.
	Spread time.Duration

	bodies [][][]byte // per broker, the bodies it alternates between
}

// RegisterResult is what a storm measured.
type RegisterResult struct {
	Registrations uint64
	Errors        uint64
	Elapsed       time.Duration
	Latency       Histogram
	// BodyBytes is the size of one broker's registration body.
	BodyBytes int
	// Compressed tells whether the bodies were zlib (Compressed, or
	// CompressAbove applied).
	Compressed bool
}

// TopicName is the name of topic i of broker b in a storm.
func TopicName(shared bool, b, i int) string {
	if shared {
		return fmt.Sprintf("topic-%05d", i)
	}
	return fmt.Sprintf("broker-%03d-topic-%05d", b, i)
}

// zlibFirstByte starts every zlib stream the body encoder writes (and no
// JSON body, which starts with '{').
const zlibFirstByte = 0x78

// changedWriteQueueNums is the write queue count of a changed topic in
// the alternate body; every other topic has 8.
const changedWriteQueueNums = 4

// encodeBodies pre-encodes broker b's bodies: one, or with NewVersion or
// ChangedTopics two that differ in DataVersion (counters 1 and 2) and in
// the first ChangedTopics topics' write queue counts.
func (s *RegisterStorm) encodeBodies(b int, stamp int64) ([][]byte, error) {
	variants := 1
	if s.NewVersion || s.ChangedTopics > 0 {
		variants = 2
	}
	var out [][]byte
	for v := range variants {
		rb := &body.RegisterBody{DataVersion: body.DataVersion{Counter: int64(v + 1), Timestamp: stamp}, FilterServers: []string{}}
		rb.Topics = make([]body.TopicConfig, s.TopicsPerBroker)
		for i := range rb.Topics {
			wq := int32(8)
			if v == 1 && i < s.ChangedTopics {
				wq = changedWriteQueueNums
			}
			rb.Topics[i] = body.TopicConfig{Name: []byte(TopicName(s.SharedTopics, b, i)), ReadQueueNums: 8, WriteQueueNums: wq, Perm: 6}
		}
		data, err := body.EncodeRegisterBody(rb, s.Generation, s.Compressed)
		if err == nil && !s.Compressed && s.CompressAbove > 0 && len(data) > s.CompressAbove {
			data, err = body.EncodeRegisterBody(rb, s.Generation, true)
		}
		if err != nil {
			return nil, fmt.Errorf("encode broker %d body: %w", b, err)
		}
		out = append(out, data)
	}
	return out, nil
}

// Prepare validates the storm and pre-encodes every broker's bodies, so
// that Run starts registering at once and the generator spends its CPU on
// the socket. Run calls it when it has not been called.
func (s *RegisterStorm) Prepare() error {
	if s.Brokers <= 0 || s.TopicsPerBroker <= 0 {
		return errors.New("a storm needs brokers and topics")
	}
	if s.ChangedTopics < 0 || s.ChangedTopics > s.TopicsPerBroker {
		return fmt.Errorf("changed topics %d out of range 0-%d", s.ChangedTopics, s.TopicsPerBroker)
	}
	if s.FirstBroker < 0 || s.Spread < 0 {
		return errors.New("first broker and spread cannot be negative")
	}
	if s.bodies != nil {
		return nil
	}
	stamp := time.Now().UnixMilli()
	bodies := make([][][]byte, s.Brokers)
	for i := range bodies {
		if s.SharedTopics && i > 0 {
			bodies[i] = bodies[0] // same names, same bytes: encode once
			continue
		}
		var err error
		if bodies[i], err = s.encodeBodies(s.FirstBroker+i, stamp); err != nil {
			return err
		}
	}
	s.bodies = bodies
	return nil
}

// request is broker b's registration carrying data, as a 5.x broker sends it.
func (s *RegisterStorm) request(b int, data []byte) *remotingclient.Request {
	addr := fmt.Sprintf("10.%d.%d.%d:10911", b>>16&255, b>>8&255, b&255)
	compressed := "false"
	if s.Generation == body.Broker4 && s.Compressed {
		compressed = "true"
	}
	return &remotingclient.Request{Code: protocol.RegisterBroker, Body: data, Ext: []remoting.Pair{
		{Key: "brokerName", Value: fmt.Sprintf("broker-%03d", b)},
		{Key: "brokerAddr", Value: addr},
		{Key: "clusterName", Value: "BenchCluster"},
		{Key: "brokerId", Value: "0"},
		{Key: "haServerAddr", Value: addr},
		{Key: "compressed", Value: compressed},
		{Key: "bodyCrc32", Value: strconv.FormatUint(uint64(crc32.ChecksumIEEE(data)&0x7FFFFFFF), 10)},
	}}
}

// Run registers every broker each interval until ctx ends or Rounds are
// done (with Hold: until ctx ends). Each broker keeps one connection, like
// a real broker, so the brokers stay registered until the storm ends.
func (s *RegisterStorm) Run(ctx context.Context) (*RegisterResult, error) {
	if err := s.Prepare(); err != nil {
		return nil, err
	}
	res := &RegisterResult{BodyBytes: len(s.bodies[0][0]), Compressed: s.bodies[0][0][0] == zlibFirstByte}
	var mu sync.Mutex
	var wg, rounds sync.WaitGroup
	errs := make([]error, s.Brokers)
	rounds.Add(s.Brokers)
	if s.Hold && s.Rounds > 0 && s.OnRoundsDone != nil {
		go func() {
			rounds.Wait()
			if ctx.Err() == nil {
				s.OnRoundsDone()
			}
		}()
	}
	start := time.Now()
	for i := range s.Brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := s.FirstBroker + i
			reqs := make([]*remotingclient.Request, len(s.bodies[i]))
			for v, data := range s.bodies[i] {
				reqs[v] = s.request(b, data)
			}
			delay := time.Duration(0)
			if s.Brokers > 1 {
				delay = s.Spread * time.Duration(i) / time.Duration(s.Brokers)
			}
			errs[i] = s.runBroker(ctx, b, reqs, start.Add(delay), res, &mu, rounds.Done)
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	return res, errors.Join(errs...)
}

func (s *RegisterStorm) runBroker(ctx context.Context, b int, reqs []*remotingclient.Request, at time.Time,
	res *RegisterResult, mu *sync.Mutex, roundsDone func()) error {
	var once sync.Once
	defer once.Do(roundsDone)
	c, err := remotingclient.Dial(ctx, s.Addr, remotingclient.Options{Version: protocol.V5_3_3})
	if err != nil {
		if ctx.Err() != nil {
			return nil // the storm ended before this broker connected
		}
		return err
	}
	defer c.Close()
	if wait := time.Until(at); wait > 0 {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
	t := time.NewTicker(max(s.Interval, time.Millisecond))
	defer t.Stop()
	for round := 0; s.Rounds == 0 || round < s.Rounds; round++ {
		start := time.Now()
		r, err := c.Invoke(ctx, reqs[round%len(reqs)])
		if ctx.Err() != nil {
			return nil
		}
		mu.Lock()
		res.Registrations++
		res.Latency.Record(time.Since(start))
		if err != nil || r.Code != protocol.Success {
			res.Errors++
		}
		mu.Unlock()
		if err != nil {
			return err
		}
		if s.OnRegistered != nil && r.Code == protocol.Success && !s.OnRegistered(b, round) {
			break
		}
		if s.Rounds != 0 && round == s.Rounds-1 {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
	once.Do(roundsDone)
	if s.Hold {
		<-ctx.Done()
	}
	return nil
}
