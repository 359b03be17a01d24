// Package remotingclient is a small RocketMQ remoting client: one TCP
// connection, requests pipelined and matched to answers by opaque. The broker
// simulator, the load generator's setup and the tests use it to speak to a
// NameServer exactly as Java brokers and admin tools do.
package remotingclient

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
)

// Options shape the requests a client sends.
type Options struct {
	// Type is the header encoding (JSON unless set).
	Type remoting.SerializeType
	// Language and Version are stamped into every request; they default to
	// a Java 5.3.3 client.
	Language string
	Version  int32
	// TLS, when set, makes Dial open the connection with a TLS handshake,
	// as a Java client with tls.enable=true does; its Certificates are the
	// client certificate presented to a NameServer that verifies clients
	// (Java's tls.client.certPath and tls.client.keyPath).
	TLS *tls.Config
}

// Request is one command to send.
type Request struct {
	Code int32
	Ext  []remoting.Pair
	Body []byte
	// Version overrides the client's version for this request when set.
	Version int32
}

// Response is a decoded answer, owning its bytes.
type Response struct {
	Type   remoting.SerializeType
	Code   int32
	Opaque int32
	Remark string
	Ext    map[string]string
	Body   []byte
}

// ErrClosed is returned for requests on, or pending when, the connection closes.
var ErrClosed = errors.New("remoting connection closed")

// Client is one connection to a remoting server.
type Client struct {
	nc   net.Conn
	opts Options

	writeMu sync.Mutex
	opaque  atomic.Int32

	mu      sync.Mutex
	pending map[int32]chan *Response
	err     error
	done    chan struct{}
}

// Dial connects to addr, with a TLS handshake when opts.TLS is set.
func Dial(ctx context.Context, addr string, opts Options) (*Client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if opts.TLS != nil {
		tc := tls.Client(nc, opts.TLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		nc = tc
	}
	return New(nc, opts), nil
}

// New wraps an established connection.
func New(nc net.Conn, opts Options) *Client {
	if opts.Language == "" {
		opts.Language = "JAVA"
	}
	if opts.Version == 0 {
		opts.Version = protocol.V5_3_3
	}
	c := &Client{nc: nc, opts: opts, pending: map[int32]chan *Response{}, done: make(chan struct{})}
	go c.readLoop()
	return c
}

// LocalAddr is the client side of the connection.
func (c *Client) LocalAddr() net.Addr { return c.nc.LocalAddr() }

// Done is closed when the connection has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// Close ends the connection; pending requests fail with ErrClosed.
func (c *Client) Close() error {
	err := c.nc.Close()
	<-c.done
	return err
}

func (c *Client) send(req *Request, opaque, flag int32) error {
	version := req.Version
	if version == 0 {
		version = c.opts.Version
	}
	frame := remoting.AppendFrame(nil, c.opts.Type, &remoting.Header{
		Code: req.Code, Language: c.opts.Language, Version: version, Opaque: opaque, Flag: flag, Ext: req.Ext,
	}, req.Body)
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if _, err := c.nc.Write(frame); err != nil {
		return fmt.Errorf("send request %d: %w", req.Code, err)
	}
	return nil
}

// Invoke sends a request and waits for its answer.
func (c *Client) Invoke(ctx context.Context, req *Request) (*Response, error) {
	ch := make(chan *Response, 1)
	opaque := c.opaque.Add(1)
	// Registered before sending, so a fast answer cannot be missed.
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, c.err
	}
	c.pending[opaque] = ch
	c.mu.Unlock()
	if err := c.send(req, opaque, 0); err != nil {
		c.mu.Lock()
		delete(c.pending, opaque)
		c.mu.Unlock()
		return nil, err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, c.failure()
		}
		return r, nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, opaque)
		c.mu.Unlock()
		return nil, fmt.Errorf("request %d: %w", req.Code, ctx.Err())
	}
}

// Oneway sends a request that expects no answer.
func (c *Client) Oneway(req *Request) error {
	return c.send(req, c.opaque.Add(1), protocol.FlagOneway)
}

func (c *Client) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// maxAnswerLength bounds an answer, length word included: 64 MiB after it,
// four times the largest request a NameServer takes.
const maxAnswerLength = 64<<20 + 4

func (c *Client) readLoop() {
	frames := remoting.NewFrameReader(bufio.NewReader(c.nc), maxAnswerLength)
	var dec remoting.Decoder
	var cmd remoting.Command
	err := func() error {
		for {
			frame, err := frames.Next()
			if err != nil {
				return err
			}
			if err := dec.Decode(frame, &cmd); err != nil {
				return err
			}
			if !cmd.IsResponse() {
				continue
			}
			r := &Response{Type: cmd.Type, Code: cmd.Code, Opaque: cmd.Opaque, Remark: string(cmd.Remark),
				Ext: map[string]string{}, Body: bytes.Clone(cmd.Body)}
			for _, e := range cmd.Ext {
				r.Ext[string(e.Key)] = string(e.Value)
			}
			c.mu.Lock()
			ch := c.pending[cmd.Opaque]
			delete(c.pending, cmd.Opaque)
			c.mu.Unlock()
			if ch != nil {
				ch <- r
			}
		}
	}()
	c.mu.Lock()
	c.err = fmt.Errorf("%w: %v", ErrClosed, err)
	for _, ch := range c.pending {
		close(ch)
	}
	c.pending = map[int32]chan *Response{}
	c.mu.Unlock()
	c.nc.Close()
	close(c.done)
}
