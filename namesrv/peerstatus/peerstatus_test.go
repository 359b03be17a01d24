package peerstatus

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"testing"
)

func TestBrokersDigest(t *testing.T) {
	if got := BrokersDigest(nil); got != "" {
		t.Fatalf("digest of no broker %q", got)
	}
	a := Broker{BrokerKey: BrokerKey{Cluster: "c", Addr: "10.0.0.1:10911"}, BrokerName: "broker-a", BrokerID: 0,
		DataVersion: DataVersion{StateVersion: 1, Timestamp: 1700000000000, Counter: 7}}
	b := Broker{BrokerKey: BrokerKey{Cluster: "c", Addr: "10.0.0.2:10911"}, BrokerName: "broker-a", BrokerID: 1}
	// The contract, spelled out: sorted lines, each ending in a newline.
	sum := sha256.Sum256([]byte("c|10.0.0.1:10911|broker-a|0|1|1700000000000|7\nc|10.0.0.2:10911|broker-a|1|0|0|0\n"))
	want := hex.EncodeToString(sum[:])
	if got := BrokersDigest([]Broker{b, a}); got != want {
		t.Fatalf("digest %s, want %s", got, want)
	}
	if got := BrokersDigest([]Broker{a, b}); got != want {
		t.Fatal("the digest depends on the order of brokers")
	}
	// Registration times are not part of it; versions are.
	a2 := a
	a2.LastUpdate = a.LastUpdate.Add(1)
	if BrokersDigest([]Broker{a2, b}) != want {
		t.Fatal("the digest changed with a heartbeat")
	}
	a2.DataVersion.Counter++
	if BrokersDigest([]Broker{a2, b}) == want {
		t.Fatal("the digest ignores DataVersion")
	}
}

func TestDigestOfFile(t *testing.T) {
	if got := Digest([]byte("")); got != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatalf("digest %s", got)
	}
}

// BenchmarkBrokersDigest is the digest of a summary of 1,000 brokers.
func BenchmarkBrokersDigest(b *testing.B) {
	brokers := make([]Broker, 1000)
	for i := range brokers {
		brokers[i] = Broker{BrokerKey: BrokerKey{Cluster: "DefaultCluster", Addr: "10.0." + strconv.Itoa(i/250) + "." + strconv.Itoa(i%250) + ":10911"},
			BrokerName: "broker-" + strconv.Itoa(i/2), BrokerID: int64(i % 2), DataVersion: DataVersion{Timestamp: 1700000000000, Counter: int64(i)}}
	}
	b.ReportAllocs()
	for b.Loop() {
		BrokersDigest(brokers)
	}
}
