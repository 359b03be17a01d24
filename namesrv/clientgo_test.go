package namesrv_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
)

func init() {
	rlog.SetLogLevel("error")
}

// TestRocketMQClientGo drives the server with rocketmq-client-go, a client
// nobody here wrote. It sends version 317, so it gets the legacy route
// dialect with bare brokerAddrs keys and parses it by hand
// (docs/protocol.md#json-dialects).
func TestRocketMQClientGo(t *testing.T) {
	s := startServer(t, nil)
	ns := s.Addr().String()
	master := startBroker(t, brokersim.Config{Cluster: "DefaultCluster", Name: "broker-a", Generation: body.Broker5, Type: remoting.RocketMQ,
		Topics: []body.TopicConfig{brokersim.Topic("TopicTest", 4), brokersim.Topic("Doomed", 2), brokersim.Topic("TBW102", 8)}})
	slave := startBroker(t, brokersim.Config{Cluster: "DefaultCluster", Name: "broker-a", ID: 1, Generation: body.Broker5})
	other := startBroker(t, brokersim.Config{Cluster: "DefaultCluster", Name: "broker-b", Compressed: true,
		Topics: []body.TopicConfig{brokersim.Topic("TopicTest", 2), {Name: []byte("ReadOnly"), ReadQueueNums: 2, WriteQueueNums: 2, Perm: 4}}})
	mustRegister(t, master, ns)
	mustRegister(t, slave, ns)
	mustRegister(t, other, ns)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{ns})))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()

	list, err := adm.FetchAllTopicList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(list.TopicList)
	if !slices.Equal(list.TopicList, []string{"Doomed", "ReadOnly", "TBW102", "TopicTest"}) {
		t.Fatalf("topic list %v", list.TopicList)
	}

	mqs, err := adm.FetchPublishMessageQueues(ctx, "TopicTest")
	if err != nil {
		t.Fatal(err)
	}
	perBroker := map[string]int{}
	for _, mq := range mqs {
		perBroker[mq.BrokerName]++
	}
	if perBroker["broker-a"] != 4 || perBroker["broker-b"] != 2 || len(perBroker) != 2 {
		t.Fatalf("publish queues %v", perBroker)
	}
	if mqs, err := adm.FetchPublishMessageQueues(ctx, "ReadOnly"); err == nil && len(mqs) > 0 {
		t.Fatalf("a read-only topic has publish queues: %v", mqs)
	}

	if err := adm.DeleteTopic(ctx, admin.WithTopicDelete("Doomed"), admin.WithBrokerAddrDelete(master.Addr())); err != nil {
		t.Fatal(err)
	}
	list, err = adm.FetchAllTopicList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(list.TopicList, "Doomed") {
		t.Fatalf("deleted topic still listed: %v", list.TopicList)
	}

	p, err := producer.NewDefaultProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		producer.WithGroupName("it-producer"),
		producer.WithRetry(0),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Shutdown() }()
	sent := map[string]int{}
	for range 6 {
		res, err := p.SendSync(ctx, primitive.NewMessage("TopicTest", []byte("hello")))
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != primitive.SendOK {
			t.Fatalf("send result %v", res)
		}
		sent[res.MessageQueue.BrokerName]++
	}
	// Every message went to a master the route named; none to the slave.
	got := len(master.Received()) + len(other.Received())
	if got != 6 || len(slave.Received()) != 0 || sent["broker-a"] != len(master.Received()) {
		t.Fatalf("sent %v; master got %d, broker-b got %d, slave got %d", sent, len(master.Received()), len(other.Received()), len(slave.Received()))
	}
	for _, m := range append(master.Received(), other.Received()...) {
		if m.Topic != "TopicTest" {
			t.Fatalf("message for %q", m.Topic)
		}
	}
}
