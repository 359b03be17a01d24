package nsc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path"
	"strconv"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	streamhttp "k8s.io/streaming/pkg/httpstream"
)

// forwards are the port-forwards of one command: for each peer, its
// remoting and HTTP ports forwarded from a loopback port of this machine
// through the API server to its pod, as `kubectl port-forward` does. The
// peers keep their addresses in every report; dial maps an address to its
// forward.
type forwards struct {
	// local maps host:port of a peer to the loopback address forwarding it.
	local map[string]string
	stops []func()
	once  sync.Once
}

// forwarder opens the port-forwards of one pod and returns the local port of
// each remote port, and a function that closes them. Tests replace it.
type forwarder func(ctx context.Context, namespace, pod string, ports []int) (map[int]int, func(), error)

// forward opens the port-forwards of every peer, remoting and HTTP ports,
// all at once; if one fails, none stays open.
func forward(ctx context.Context, fw forwarder, namespace string, peers []peerStatus, httpPort int) (*forwards, error) {
	type opened struct {
		ports map[int]int
		stop  func()
		err   error
	}
	hosts := make([]string, len(peers))
	remoting := make([]int, len(peers))
	for i, p := range peers {
		host, port, err := net.SplitHostPort(p.Address)
		n, perr := strconv.Atoi(port)
		if err != nil || perr != nil {
			return nil, fmt.Errorf("peer %s: address %q has no port", p.Name, p.Address)
		}
		hosts[i], remoting[i] = host, n
	}
	results := make([]opened, len(peers))
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Go(func() {
			ports, stop, err := fw(ctx, namespace, p.Name, []int{remoting[i], httpPort})
			results[i] = opened{ports: ports, stop: stop, err: err}
		})
	}
	wg.Wait()
	f := &forwards{local: map[string]string{}}
	var errs []error
	for i, r := range results {
		if r.err != nil {
			errs = append(errs, fmt.Errorf("port-forward to pod %s/%s: %w", namespace, peers[i].Name, r.err))
			continue
		}
		f.stops = append(f.stops, r.stop)
		for _, port := range []int{remoting[i], httpPort} {
			local, ok := r.ports[port]
			if !ok {
				errs = append(errs, fmt.Errorf("port-forward to pod %s/%s: port %d not forwarded", namespace, peers[i].Name, port))
				continue
			}
			f.local[net.JoinHostPort(hosts[i], strconv.Itoa(port))] = net.JoinHostPort("127.0.0.1", strconv.Itoa(local))
		}
	}
	if len(errs) > 0 {
		f.close()
		return nil, errors.Join(errs...)
	}
	return f, nil
}

// dial connects to a peer's address through its forward.
func (f *forwards) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	local, ok := f.local[addr]
	if !ok {
		return nil, fmt.Errorf("no port-forward to %s (only the peers' remoting and HTTP ports are forwarded)", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, local)
}

// close stops every forward.
func (f *forwards) close() {
	f.once.Do(func() {
		for _, stop := range f.stops {
			stop()
		}
	})
}

// apiForwarder forwards through the API server of cfg, the way kubectl does:
// a WebSocket tunnel, or SPDY where the server does not offer one.
func apiForwarder(cfg *rest.Config) forwarder {
	return func(ctx context.Context, namespace, pod string, ports []int) (map[int]int, func(), error) {
		u, _, err := rest.DefaultServerUrlFor(cfg)
		if err != nil {
			return nil, nil, err
		}
		u.Path = path.Join(u.Path, "api", "v1", "namespaces", namespace, "pods", pod, "portforward")
		transport, upgrader, err := spdy.RoundTripperFor(cfg)
		if err != nil {
			return nil, nil, err
		}
		dialer := spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
		tunneling, err := portforward.NewSPDYOverWebsocketDialerForStreaming(u, cfg)
		if err != nil {
			return nil, nil, err
		}
		dialer = portforward.NewFallbackDialerForStreaming(tunneling, dialer, func(err error) bool {
			return streamhttp.IsUpgradeFailure(err) || streamhttp.IsHTTPSProxyError(err)
		})
		specs := make([]string, len(ports))
		for i, p := range ports {
			specs[i] = "0:" + strconv.Itoa(p)
		}
		stop, ready := make(chan struct{}), make(chan struct{})
		pf, err := portforward.NewOnAddressesForStreaming(dialer, []string{"127.0.0.1"}, specs, stop, ready, io.Discard, io.Discard)
		if err != nil {
			return nil, nil, err
		}
		done := make(chan error, 1)
		go func() { done <- pf.ForwardPorts() }()
		select {
		case <-ready:
		case err := <-done:
			if err == nil {
				err = errors.New("ended before it was ready")
			}
			return nil, nil, err
		case <-ctx.Done():
			close(stop)
			<-done //nolint:errcheck // stopped: ctx's error says why
			return nil, nil, ctx.Err()
		}
		got, err := pf.GetPorts()
		if err != nil {
			close(stop)
			<-done //nolint:errcheck // stopped: GetPorts's error says why
			return nil, nil, err
		}
		out := map[int]int{}
		for _, p := range got {
			out[int(p.Remote)] = int(p.Local)
		}
		return out, func() {
			close(stop)
			<-done //nolint:errcheck // the caller stopped it: its end is expected
		}, nil
	}
}
