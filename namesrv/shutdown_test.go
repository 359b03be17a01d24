package namesrv_test

import (
	"context"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
)

// TestShutdownKeepsBrokersUntilTheEnd: a NameServer shutting down closes its
// connections one after another. Closing a broker's connection must not
// evict that broker, or the clients whose requests are still being answered
// on other connections would hear that their topic does not exist. Seen end
// to end: during a roll, clients of the peer being stopped got
// TOPIC_NOT_EXIST for a moment.
func TestShutdownKeepsBrokersUntilTheEnd(t *testing.T) {
	cfg, hl := testConfig(t, nil)
	s, err := namesrv.New(namesrv.Options{Config: cfg, HTTPListener: hl})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, brokersim.Config{Cluster: "c", Name: "broker-a", Generation: body.Broker5,
		Topics: []body.TopicConfig{brokersim.Topic("T", 4), brokersim.Topic("TBW102", 8)}})
	mustRegister(t, b, s.Addr().String())
	if n := s.Routes().Stats().LiveBrokers; n != 1 {
		t.Fatalf("%d live brokers after the registration", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if n := s.Routes().Stats().LiveBrokers; n != 1 {
		t.Errorf("%d live brokers once the broker's connection was closed by the shutdown, want 1: it was evicted", n)
	}
	if _, ok := s.Routes().Route([]byte("T"), 0); !ok {
		t.Error("the topic's route was gone during the shutdown")
	}
}
