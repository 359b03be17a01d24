package nsadmin

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
)

// WriteResult is one peer's answer to a write.
type WriteResult struct {
	Addr string `json:"nameServer"`
	OK   bool   `json:"ok"`
	// Count is the number of topics changed, for wipeWritePerm and
	// addWritePerm.
	Count *int   `json:"count,omitempty"`
	Error string `json:"error,omitempty"`
}

type writeReport struct {
	base
	Results []WriteResult `json:"results"`
	// what names the change for the table's lines, mqadmin's words:
	// "<what> in name server[addr] OK".
	what string
}

func (r *writeReport) table(w io.Writer) {
	for _, res := range r.Results {
		switch {
		case !res.OK:
			fmt.Fprintf(w, "%s in name server[%s] Failed\n", r.what, res.Addr)
		case res.Count != nil:
			fmt.Fprintf(w, "%s in name server[%s] OK, %d\n", r.what, res.Addr, *res.Count)
		default:
			fmt.Fprintf(w, "%s in name server[%s] OK\n", r.what, res.Addr)
		}
	}
}

// write sends one request to every peer; countKey names the answer's
// header field holding a count, if any.
func write(ctx context.Context, ps *Peers, what string, code int32, body []byte, countKey string, ext ...string) *writeReport {
	rep := &writeReport{base: newBase(ps), what: what}
	answers := each(ctx, ps, func(ctx context.Context, p *peer) (*int, error) {
		r, err := p.call(ctx, code, body, ext...)
		if err != nil || countKey == "" {
			return nil, err
		}
		n, err := strconv.Atoi(r.Ext[countKey])
		if err != nil {
			return nil, badAnswer(p.addr, fmt.Errorf("%w: %s %q is not a number", errAnswer, countKey, r.Ext[countKey]))
		}
		return &n, nil
	})
	for _, a := range answers {
		res := WriteResult{Addr: a.Addr, OK: a.Err == nil, Count: a.Value}
		if a.Err != nil {
			rep.fail(a.Addr, a.Err)
			res.Error = asPeerError(a.Addr, a.Err).Msg
		}
		rep.Results = append(rep.Results, res)
	}
	return rep
}

func required(flag, value string) (string, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return "", usagef("%s is required", flag)
	}
	return v, nil
}

type updateNamesrvConfig struct{ key, value string }

func (c *updateNamesrvConfig) check() (err error) {
	if c.key, err = required("-k/--key", c.key); err != nil {
		return err
	}
	// mqadmin trims the value and sends it even when empty.
	c.value = strings.TrimSpace(c.value)
	return nil
}

func (c *updateNamesrvConfig) run(ctx context.Context, ps *Peers) report {
	body := config.FormatProperties([]config.Property{{Key: c.key, Value: c.value}})
	return write(ctx, ps, fmt.Sprintf("update name server config [%s=%s]", c.key, c.value), protocol.UpdateNamesrvConfig, body, "")
}

type updateKvConfig struct{ namespace, key, value string }

func (c *updateKvConfig) check() (err error) {
	if c.namespace, err = required("-s (the KV namespace)", c.namespace); err != nil {
		return err
	}
	if c.key, err = required("-k/--key", c.key); err != nil {
		return err
	}
	c.value = strings.TrimSpace(c.value)
	return nil
}

func (c *updateKvConfig) run(ctx context.Context, ps *Peers) report {
	return write(ctx, ps, fmt.Sprintf("create or update kv config [%s: %s=%s]", c.namespace, c.key, c.value),
		protocol.PutKVConfig, nil, "", "namespace", c.namespace, "key", c.key, "value", c.value)
}

type deleteKvConfig struct{ namespace, key string }

func (c *deleteKvConfig) check() (err error) {
	if c.namespace, err = required("-s (the KV namespace)", c.namespace); err != nil {
		return err
	}
	c.key, err = required("-k/--key", c.key)
	return err
}

func (c *deleteKvConfig) run(ctx context.Context, ps *Peers) report {
	return write(ctx, ps, fmt.Sprintf("delete kv config [%s: %s]", c.namespace, c.key),
		protocol.DeleteKVConfig, nil, "", "namespace", c.namespace, "key", c.key)
}

// writePerm is wipeWritePerm and addWritePerm.
type writePerm struct {
	brokerName string
	add        bool
}

func (c *writePerm) check() (err error) {
	c.brokerName, err = required("-b/--brokerName", c.brokerName)
	return err
}

func (c *writePerm) run(ctx context.Context, ps *Peers) report {
	if c.add {
		return write(ctx, ps, fmt.Sprintf("add write perm of broker[%s]", c.brokerName),
			protocol.AddWritePermOfBroker, nil, "addTopicCount", "brokerName", c.brokerName)
	}
	return write(ctx, ps, fmt.Sprintf("wipe write perm of broker[%s]", c.brokerName),
		protocol.WipeWritePermOfBroker, nil, "wipeTopicCount", "brokerName", c.brokerName)
}

type deleteTopic struct{ topic, cluster string }

// deleteTopicNote is printed with every deleteTopic: the other half is
// the brokers'.
const deleteTopicNote = "deleted from the NameServers only: the topic's brokers still hold it and register it again " +
	"with their next heartbeat (30 s) unless it is deleted there too (mqadmin deleteTopic does both halves)"

func (c *deleteTopic) check() (err error) {
	if c.topic, err = required("-t/--topic", c.topic); err != nil {
		return err
	}
	c.cluster, err = required("-c/--clusterName", c.cluster)
	return err
}

func (c *deleteTopic) run(ctx context.Context, ps *Peers) report {
	rep := write(ctx, ps, fmt.Sprintf("delete topic [%s] from cluster [%s]", c.topic, c.cluster),
		protocol.DeleteTopicInNamesrv, nil, "", "topic", c.topic, "clusterName", c.cluster)
	rep.Notes = append(rep.Notes, deleteTopicNote)
	return rep
}
