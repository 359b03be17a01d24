package pkubelet

import (
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

func TestIPAMRoundRobin(t *testing.T) {
	a := newIPAM()
	n1, _ := a.allocate("a")
	n2, _ := a.allocate("b")
	if n1 != 2 || n2 != 3 {
		t.Fatalf("first addresses = %d, %d; want 2, 3", n1, n2)
	}
	if again, _ := a.allocate("a"); again != n1 {
		t.Errorf("same UID got %d, want %d", again, n1)
	}
	a.release(n1)
	// A recreated Pod gets a new address, not the one just released.
	if n3, _ := a.allocate("c"); n3 != 4 {
		t.Errorf("after release got %d, want 4", n3)
	}
}

func TestIPAMWrapsAndExhausts(t *testing.T) {
	a := newIPAM()
	for i := firstHost; i <= lastHost; i++ {
		if _, err := a.allocate(uidOf(i)); err != nil {
			t.Fatalf("allocation %d: %v", i, err)
		}
	}
	if _, err := a.allocate("one-too-many"); err == nil {
		t.Fatal("allocation beyond the range must fail")
	}
	a.release(7)
	if n, err := a.allocate("late"); err != nil || n != 7 {
		t.Errorf("after wrap got %d, %v; want the freed 7", n, err)
	}
}

func uidOf(i int) types.UID { return types.UID(strconv.Itoa(i)) }

func TestMapAddr(t *testing.T) {
	mapped, err := New(Config{Client: fake.NewClientset(), RootDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"10.244.0.5":      "127.0.0.5",
		"10.244.0.5:9876": "127.0.0.5:9876",
		"10.244.0.1:443":  "10.244.0.1:443", // the node, not a pod
		"10.244.1.5:80":   "10.244.1.5:80",
		"web-0.web:80":    "web-0.web:80",
	} {
		if got := mapped.MapAddr(in); got != want {
			t.Errorf("mapped MapAddr(%q) = %q, want %q", in, got, want)
		}
	}
	box, err := New(Config{Client: fake.NewClientset(), RootDir: t.TempDir(), IPPrefix: "10.244.0."})
	if err != nil {
		t.Fatal(err)
	}
	if got := box.MapAddr("10.244.0.5:80"); got != "10.244.0.5:80" {
		t.Errorf("box MapAddr = %q, want the identity", got)
	}
}
