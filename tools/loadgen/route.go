package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
)

// RouteLoad is a closed-loop route-query load: Conns connections, each
// keeping Inflight GET_ROUTEINFO_BY_TOPIC requests outstanding, cycling
// through Topics.
type RouteLoad struct {
	Addr     string
	Conns    int
	Inflight int
	Topics   []string
	// Version of the requests: 317 (rocketmq-client-go) gets the legacy
	// dialect, 401 and above the standard one.
	Version int32
	Type    remoting.SerializeType
	// MaxRequests bounds the total number of requests (0: no bound).
	MaxRequests int64
	// Duration, when positive, ends the load this long after it is under
	// way: every connection established and answered once. On a busy host
	// a dial or a first answer can wait for a CPU longer than a short
	// window lasts; the window is for queries, and holds some on every
	// connection. ctx bounds the whole run, connecting included.
	Duration time.Duration
	// OnReady, when set, is called once the load is under way (every
	// connection has had its first answer): a caller can start what the
	// load is to run beside. A load that ends before that never calls it.
	OnReady func()
}

// RouteResult is what a route load measured.
type RouteResult struct {
	Requests uint64
	// Errors counts answers other than SUCCESS or TOPIC_NOT_EXIST.
	Errors uint64
	// NotFound counts TOPIC_NOT_EXIST answers.
	NotFound uint64
	// Elapsed is the time from the end of the dials, or with Duration from
	// when the load was under way, to its end.
	Elapsed time.Duration
	Latency Histogram
}

// Throughput is answers per second.
func (r *RouteResult) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// opaqueBase makes every opaque exactly ten decimal digits, so that a
// pre-encoded JSON request keeps its length and only its digits change.
const opaqueBase = 1_000_000_000

// template is one topic's pre-encoded request and where its opaque sits.
type template struct {
	frame []byte
	at    int
}

func buildTemplates(l *RouteLoad) ([]template, error) {
	var out []template
	for _, topic := range l.Topics {
		h := &remoting.Header{Code: protocol.GetRouteInfoByTopic, Language: "JAVA", Version: l.Version, Opaque: opaqueBase,
			Ext: []remoting.Pair{{Key: "topic", Value: topic}}}
		frame := remoting.AppendFrame(nil, l.Type, h, nil)
		at := 8 + 5 // binary: length word, type/length word, code, language, version
		if l.Type == remoting.JSON {
			at = bytes.Index(frame, []byte(`"opaque":1000000000`)) + len(`"opaque":`)
			if at < len(`"opaque":`) {
				return nil, errors.New("opaque not found in the encoded request")
			}
		}
		out = append(out, template{frame: frame, at: at})
	}
	return out, nil
}

func (t *template) stamp(dst []byte, opaque int32, typ remoting.SerializeType) []byte {
	start := len(dst)
	dst = append(dst, t.frame...)
	if typ == remoting.JSON {
		strconv.AppendInt(dst[start+t.at:start+t.at], int64(opaque), 10)
	} else {
		binary.BigEndian.PutUint32(dst[start+t.at:], uint32(opaque))
	}
	return dst
}

// Run drives the load until ctx ends, Duration has passed or MaxRequests
// answers arrived. The end of ctx is the stop, not a failure, even when it
// comes before a connection is established (the load then sent nothing).
func (l *RouteLoad) Run(ctx context.Context) (*RouteResult, error) {
	if len(l.Topics) == 0 || l.Conns <= 0 || l.Inflight <= 0 {
		return nil, errors.New("route load needs topics, connections and requests in flight")
	}
	tpl, err := buildTemplates(l)
	if err != nil {
		return nil, err
	}
	var conns []net.Conn
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	var d net.Dialer
	for range l.Conns {
		nc, err := d.DialContext(ctx, "tcp", l.Addr)
		if err != nil {
			if ctx.Err() != nil {
				return &RouteResult{}, nil
			}
			return nil, fmt.Errorf("dial %s: %w", l.Addr, err)
		}
		conns = append(conns, nc)
	}
	start := time.Now()
	run, stop := context.WithCancel(ctx)
	defer stop()
	var window *time.Timer
	var waiting atomic.Int64 // connections yet to have an answer
	waiting.Store(int64(len(conns)))
	answered := func() {
		if waiting.Add(-1) != 0 {
			return
		}
		if l.Duration > 0 {
			start = time.Now() // read after wg.Wait: this runs in a connection's goroutine
			window = time.AfterFunc(l.Duration, stop)
		}
		if l.OnReady != nil {
			l.OnReady()
		}
	}
	var budget atomic.Int64
	budget.Store(l.MaxRequests)
	if l.MaxRequests <= 0 {
		budget.Store(1 << 62)
	}
	results := make([]RouteResult, l.Conns)
	errs := make([]error, l.Conns)
	var wg sync.WaitGroup
	for i, nc := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = l.runConn(run, nc, tpl, i, &budget, &results[i], answered)
		}()
	}
	wg.Wait()
	if window != nil {
		window.Stop()
	}
	total := &RouteResult{Elapsed: time.Since(start)}
	for i := range results {
		total.Requests += results[i].Requests
		total.Errors += results[i].Errors
		total.NotFound += results[i].NotFound
		total.Latency.Merge(&results[i].Latency)
	}
	return total, errors.Join(errs...)
}

// runConn keeps Inflight requests outstanding on one connection: it reads
// whatever answers have arrived and sends as many new requests in a single
// write, the way a busy client's pipeline behaves.
// firstAnswer is called after the connection's first answer.
func (l *RouteLoad) runConn(ctx context.Context, nc net.Conn, tpl []template, offset int, budget *atomic.Int64, res *RouteResult,
	firstAnswer func()) error {
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	ring := make([]time.Time, l.Inflight*2)
	next := int32(0)
	topic := offset % len(tpl)
	var out []byte
	send := func(n int) (int, error) {
		out = out[:0]
		now := time.Now()
		sent := 0
		for range n {
			if budget.Add(-1) < 0 {
				break
			}
			sent++
			op := opaqueBase + next
			ring[int(next)%len(ring)] = now
			out = tpl[topic].stamp(out, op, l.Type)
			next = (next + 1) % (1<<31 - 1 - opaqueBase)
			topic = (topic + 1) % len(tpl)
		}
		if sent == 0 {
			return 0, nil
		}
		_, err := nc.Write(out)
		return sent, err
	}
	outstanding, err := send(l.Inflight)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("send: %w", err)
	}
	frames := remoting.NewFrameReader(bufio.NewReaderSize(nc, 256<<10), remoting.DefaultFrameMaxLength)
	var dec remoting.Decoder
	var cmd remoting.Command
	for outstanding > 0 {
		answered := 0
		for {
			frame, err := frames.Next()
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("read answer: %w", err)
			}
			if err := dec.Decode(frame, &cmd); err != nil {
				return fmt.Errorf("decode answer: %w", err)
			}
			sent := ring[int(cmd.Opaque-opaqueBase)%len(ring)]
			res.Latency.Record(time.Since(sent))
			res.Requests++
			switch cmd.Code {
			case protocol.Success:
			case protocol.TopicNotExist:
				res.NotFound++
			default:
				res.Errors++
			}
			answered++
			if !frames.Ready() {
				break
			}
		}
		if res.Requests == uint64(answered) {
			firstAnswer()
		}
		outstanding -= answered
		if ctx.Err() != nil {
			continue
		}
		sent, err := send(answered)
		if err != nil {
			// The end of ctx moves the deadline into the past, which fails
			// a write that began just before it: that is the stop, not a
			// failure.
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("send: %w", err)
		}
		outstanding += sent
	}
	return nil
}
