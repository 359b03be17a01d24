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
	Generation   body.BrokerGeneration
	// Rounds bounds the registrations per broker (0: until ctx ends).
	Rounds int
}

// RegisterResult is what a storm measured.
type RegisterResult struct {
	Registrations uint64
	Errors        uint64
	Elapsed       time.Duration
	Latency       Histogram
	// BodyBytes is the size of one broker's registration body.
	BodyBytes int
}

// TopicName is the name of topic i of broker b in a storm.
func TopicName(shared bool, b, i int) string {
	if shared {
		return fmt.Sprintf("topic-%05d", i)
	}
	return fmt.Sprintf("broker-%03d-topic-%05d", b, i)
}

// request builds broker b's registration, as a 5.x broker sends it.
func (s *RegisterStorm) request(b int) (*remotingclient.Request, error) {
	rb := &body.RegisterBody{DataVersion: body.DataVersion{Counter: 1, Timestamp: time.Now().UnixMilli()}, FilterServers: []string{}}
	for i := range s.TopicsPerBroker {
		rb.Topics = append(rb.Topics, body.TopicConfig{Name: []byte(TopicName(s.SharedTopics, b, i)), ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6})
	}
	data, err := body.EncodeRegisterBody(rb, s.Generation, s.Compressed)
	if err != nil {
		return nil, err
	}
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
	}}, nil
}

// Run registers every broker each interval until ctx ends or Rounds are
// done. Each broker keeps one connection, like a real broker, so the
// brokers stay registered until the storm ends.
func (s *RegisterStorm) Run(ctx context.Context) (*RegisterResult, error) {
	if s.Brokers <= 0 || s.TopicsPerBroker <= 0 {
		return nil, errors.New("a storm needs brokers and topics")
	}
	reqs := make([]*remotingclient.Request, s.Brokers)
	for b := range reqs {
		var err error
		if reqs[b], err = s.request(b); err != nil {
			return nil, err
		}
	}
	res := &RegisterResult{BodyBytes: len(reqs[0].Body)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, s.Brokers)
	start := time.Now()
	for b := range s.Brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[b] = s.runBroker(ctx, reqs[b], res, &mu)
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	return res, errors.Join(errs...)
}

func (s *RegisterStorm) runBroker(ctx context.Context, req *remotingclient.Request, res *RegisterResult, mu *sync.Mutex) error {
	c, err := remotingclient.Dial(ctx, s.Addr, remotingclient.Options{Version: protocol.V5_3_3})
	if err != nil {
		return err
	}
	defer c.Close()
	t := time.NewTicker(max(s.Interval, time.Millisecond))
	defer t.Stop()
	for round := 0; s.Rounds == 0 || round < s.Rounds; round++ {
		start := time.Now()
		r, err := c.Invoke(ctx, req)
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
		if s.Rounds != 0 && round == s.Rounds-1 {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
	return nil
}
