package nsadmin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
)

// ConnOptions say how to reach every peer.
type ConnOptions struct {
	// Timeout bounds connecting (with the TLS handshake) and each request.
	Timeout time.Duration
	// Serialize is the header encoding of the requests.
	Serialize remoting.SerializeType
	// TLS, when set, is used for every connection; an empty ServerName is
	// the host of each peer's address.
	TLS *tls.Config
	// Dial, when set, replaces a plain TCP dial (Target.Dial).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// dial connects to addr with Dial, or plainly.
func (o *ConnOptions) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if o.Dial != nil {
		return o.Dial(ctx, network, addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// ParseAddrs splits a NameServer list the way mqadmin does ("a:9876;b:9876";
// commas are accepted too), dropping blanks and repeats, and checks that
// each entry is host:port.
func ParseAddrs(list string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, a := range strings.FieldsFunc(list, func(r rune) bool { return r == ';' || r == ',' }) {
		a = strings.TrimSpace(a)
		if a == "" || seen[a] {
			continue
		}
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" || port == "" {
			return nil, fmt.Errorf("NameServer address %q is not host:port", a)
		}
		seen[a] = true
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, errors.New("the NameServer list is empty")
	}
	return out, nil
}

// peer is one NameServer and its connection, made on first use.
type peer struct {
	addr string
	opts *ConnOptions

	once   sync.Once
	client *remotingclient.Client
	head   *headConn
	err    *PeerError
}

func (p *peer) connect(ctx context.Context) (*remotingclient.Client, *PeerError) {
	p.once.Do(func() {
		ctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
		defer cancel()
		nc, err := p.opts.dial(ctx, "tcp", p.addr)
		if err != nil {
			p.err = dialFailed(p.addr, p.opts.Timeout, err)
			return
		}
		if p.opts.TLS != nil {
			cfg := p.opts.TLS.Clone()
			if cfg.ServerName == "" {
				cfg.ServerName, _, _ = net.SplitHostPort(p.addr)
			}
			tc := tls.Client(nc, cfg)
			if err := tc.HandshakeContext(ctx); err != nil {
				nc.Close()
				p.err = handshakeFailed(p.addr, p.opts.Timeout, err)
				return
			}
			nc = tc
		}
		p.head = &headConn{Conn: nc}
		p.client = remotingclient.New(p.head, remotingclient.Options{Type: p.opts.Serialize})
	})
	return p.client, p.err
}

// call sends one request. It returns the answer only when it is SUCCESS;
// an error answer is a *PeerError of kind Refused carrying its code.
func (p *peer) call(ctx context.Context, code int32, body []byte, ext ...string) (*remotingclient.Response, error) {
	c, perr := p.connect(ctx)
	if perr != nil {
		return nil, perr
	}
	req := &remotingclient.Request{Code: code, Body: body}
	for i := 0; i+1 < len(ext); i += 2 {
		req.Ext = append(req.Ext, remoting.Pair{Key: ext[i], Value: ext[i+1]})
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
	defer cancel()
	r, err := c.Invoke(ctx, req)
	if err != nil {
		return nil, invokeFailed(p.addr, p.opts.Timeout, p.opts.TLS != nil, p.head.first(), err)
	}
	if r.Code != protocol.Success {
		return r, refused(p.addr, r)
	}
	return r, nil
}

func (p *peer) close() {
	if p.client != nil {
		p.client.Close()
	}
}

// isCode tells whether err is a refusal with this response code.
func isCode(err error, code int32) bool {
	var pe *PeerError
	return errors.As(err, &pe) && pe.Kind == Refused && pe.Code == code
}

// headConn keeps the first bytes the peer sends, to tell what answered
// when the answer is not a remoting frame.
type headConn struct {
	net.Conn
	mu  sync.Mutex
	buf []byte
}

const headSize = 8

func (c *headConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.mu.Lock()
		if room := headSize - len(c.buf); room > 0 {
			c.buf = append(c.buf, b[:min(n, room)]...)
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *headConn) first() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.buf...)
}

// Peers is the set of NameServers a command talks to.
type Peers struct {
	peers []*peer
}

// NewPeers prepares connections to addrs; nothing is dialled yet.
func NewPeers(addrs []string, opts ConnOptions) *Peers {
	ps := &Peers{}
	for _, a := range addrs {
		ps.peers = append(ps.peers, &peer{addr: a, opts: &opts})
	}
	return ps
}

// Addrs are the peers' addresses, in the order given.
func (ps *Peers) Addrs() []string {
	out := make([]string, len(ps.peers))
	for i, p := range ps.peers {
		out[i] = p.addr
	}
	return out
}

// Close ends every connection.
func (ps *Peers) Close() {
	for _, p := range ps.peers {
		p.close()
	}
}

// answer is one peer's result of a fan-out.
type answer[T any] struct {
	Addr  string
	Value T
	Err   error
}

// each runs f against every peer in parallel and returns the results in
// the peers' order.
func each[T any](ctx context.Context, ps *Peers, f func(context.Context, *peer) (T, error)) []answer[T] {
	out := make([]answer[T], len(ps.peers))
	var wg sync.WaitGroup
	for i, p := range ps.peers {
		out[i].Addr = p.addr
		wg.Go(func() {
			out[i].Value, out[i].Err = f(ctx, p)
		})
	}
	wg.Wait()
	return out
}
