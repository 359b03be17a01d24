package nsadmin

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
)

// The answers nsadmin reads are namesrv/body's types (ClusterInfo,
// TopicRouteData, TopicList), read by the decoders that also read back the
// NameServer's own answers in its tests; their json tags, the field names of
// the Java classes, are the names of the -o json output. Only the KV table,
// which the NameServer writes in namesrv/kvconfig, is read here.

// errAnswer marks an answer body that is not what its request code promises.
var errAnswer = errors.New("unexpected answer body")

// answerOf adapts a body decoder: a body it refuses is an errAnswer.
func answerOf[T any](decode func([]byte) (T, error)) func([]byte) (T, error) {
	return func(data []byte) (T, error) {
		v, err := decode(data)
		if err != nil {
			var zero T
			return zero, fmt.Errorf("%w: %w", errAnswer, err)
		}
		return v, nil
	}
}

var (
	decodeClusterInfo = answerOf(body.DecodeClusterInfo)
	decodeTopics      = answerOf(func(data []byte) ([]string, error) {
		tl, err := body.DecodeTopicList(data)
		if err != nil {
			return nil, err
		}
		return tl.Topics, nil
	})
	decodeRoute = answerOf(func(data []byte) (*body.TopicRouteData, error) {
		rd, err := body.DecodeTopicRouteData(data)
		if err == nil {
			// Peers are compared, and routes printed, in broker name
			// order; Java lists them in hash order.
			slices.SortStableFunc(rd.BrokerDatas, func(a, b *body.BrokerData) int { return cmp.Compare(a.BrokerName, b.BrokerName) })
			slices.SortStableFunc(rd.QueueDatas, func(a, b body.QueueData) int { return cmp.Compare(a.BrokerName, b.BrokerName) })
		}
		return rd, err
	})
	decodeKVTable = answerOf(readKVTable)
)

// readKVTable reads a GET_KVLIST_BY_NAMESPACE answer, Java's KVTable
// {"table":{...}}; fastjson reads numbers and booleans where it expects
// strings, and so does this.
func readKVTable(data []byte) (map[string]string, error) {
	r := fjson.NewReader(data)
	out := map[string]string{}
	for key := range r.Members() {
		switch {
		case string(key) != "table":
			r.Skip()
		case r.Null():
		default:
			for k := range r.Members() {
				k := string(k)
				v, _ := r.Scalar()
				out[k] = string(v)
			}
		}
	}
	if err := r.End(); err != nil {
		return nil, fmt.Errorf("decode KV table: %w", err)
	}
	return out, nil
}
