package pkubelet

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

const (
	firstHost = 2
	lastHost  = 254
)

// ipam hands out host numbers round-robin (like CNI host-local), so that a
// recreated Pod usually gets a new address, as in a real cluster, and code
// that wrongly pins Pod IPs fails here too.
type ipam struct {
	mu   sync.Mutex
	used map[int]types.UID
	last int
}

func newIPAM() *ipam { return &ipam{used: map[int]types.UID{}, last: firstHost - 1} }

func (a *ipam) allocate(uid types.UID) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for n, owner := range a.used {
		if owner == uid {
			return n, nil
		}
	}
	for i := 0; i <= lastHost-firstHost; i++ {
		n := firstHost + (a.last-firstHost+1+i)%(lastHost-firstHost+1)
		if _, taken := a.used[n]; !taken {
			a.used[n] = uid
			a.last = n
			return n, nil
		}
	}
	return 0, errors.New("pkubelet: no free pod address")
}

func (a *ipam) release(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.used, n)
}

// MapAddr translates a reported Pod address ("10.244.0.5" or
// "10.244.0.5:8080") to the address the process binds. It is the identity
// in box mode and for any other address.
func (k *Kubelet) MapAddr(addr string) string {
	if k.cfg.IPPrefix == k.cfg.ReportedIPPrefix {
		return addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = addr, ""
	}
	rest, ok := strings.CutPrefix(host, k.cfg.ReportedIPPrefix)
	if !ok {
		return addr
	}
	if n, err := strconv.Atoi(rest); err != nil || n < firstHost || n > lastHost {
		return addr
	}
	host = k.cfg.IPPrefix + rest
	if port == "" {
		return host
	}
	return net.JoinHostPort(host, port)
}

// DialContext dials addr after MapAddr; use it as a transport's DialContext
// to reach Pods by their reported addresses in mapped mode.
func (k *Kubelet) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, k.MapAddr(addr))
}
