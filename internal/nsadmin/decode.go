package nsadmin

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
)

// The answers nsadmin reads, in the field names of their Java classes
// (ClusterInfo, BrokerData, TopicRouteData, QueueData, TopicList, KVTable),
// which are also the names of the -o json output.

// BrokerData is one broker group of a cluster-info or route answer.
type BrokerData struct {
	Cluster    string `json:"cluster"`
	BrokerName string `json:"brokerName"`
	// BrokerAddrs maps brokerId to address; id 0 is the master.
	BrokerAddrs map[int64]string `json:"brokerAddrs"`
	ZoneName    string           `json:"zoneName,omitempty"`
}

// ClusterInfo is the answer to GET_BROKER_CLUSTER_INFO.
type ClusterInfo struct {
	// BrokerAddrTable is keyed by broker name.
	BrokerAddrTable map[string]BrokerData `json:"brokerAddrTable"`
	// ClusterAddrTable maps a cluster to its broker names.
	ClusterAddrTable map[string][]string `json:"clusterAddrTable"`
}

// QueueData is a broker's queue layout for one topic.
type QueueData struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int32  `json:"readQueueNums"`
	WriteQueueNums int32  `json:"writeQueueNums"`
	Perm           int32  `json:"perm"`
	TopicSysFlag   int32  `json:"topicSysFlag"`
}

// TopicRouteData is the answer to GET_ROUTEINFO_BY_TOPIC.
type TopicRouteData struct {
	OrderTopicConf    string              `json:"orderTopicConf,omitempty"`
	QueueDatas        []QueueData         `json:"queueDatas"`
	BrokerDatas       []BrokerData        `json:"brokerDatas"`
	FilterServerTable map[string][]string `json:"filterServerTable,omitempty"`
}

// errAnswer marks an answer body that is not what its request code promises.
var errAnswer = errors.New("unexpected answer body")

func answerErr(what string, err error) error {
	return fmt.Errorf("%w: %s: %v", errAnswer, what, err)
}

// parseDoc reads a whole JSON document (fastjson dialects included) into a
// tree; the answers nsadmin reads are small enough for that.
func parseDoc(data []byte) (fjson.Value, error) {
	r := fjson.NewReader(data)
	v, err := r.Value()
	if err == nil {
		err = r.End()
	}
	return v, err
}

// member finds an object member; a null member counts as absent.
func member(v fjson.Value, key string) (fjson.Value, bool) {
	for _, m := range v.Members {
		if m.Key == key {
			return m.Value, m.Value.Kind != fjson.Null
		}
	}
	return fjson.Value{}, false
}

func expect(v fjson.Value, k fjson.Kind, what string) error {
	if v.Kind != k {
		return fmt.Errorf("%s is not %s", what, kindName(k))
	}
	return nil
}

func kindName(k fjson.Kind) string {
	switch k {
	case fjson.Object:
		return "an object"
	case fjson.Array:
		return "an array"
	case fjson.String:
		return "a string"
	case fjson.Number:
		return "a number"
	}
	return "a scalar"
}

// text is a scalar's text; fastjson reads numbers and booleans where it
// expects strings, and so does this.
func text(v fjson.Value, what string) (string, error) {
	switch v.Kind {
	case fjson.String, fjson.Number, fjson.Bool:
		return v.Text, nil
	case fjson.Null:
		return "", nil
	}
	return "", fmt.Errorf("%s is not a string", what)
}

func integer(v fjson.Value, what string, bits int) (int64, error) {
	s, err := text(v, what)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not an integer", what, s)
	}
	return n, nil
}

func stringList(v fjson.Value, what string) ([]string, error) {
	if err := expect(v, fjson.Array, what); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(v.Items))
	for i, it := range v.Items {
		s, err := text(it, fmt.Sprintf("%s[%d]", what, i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func readBrokerData(v fjson.Value, what string) (BrokerData, error) {
	var b BrokerData
	if err := expect(v, fjson.Object, what); err != nil {
		return b, err
	}
	var err error
	if f, ok := member(v, "cluster"); ok {
		if b.Cluster, err = text(f, what+".cluster"); err != nil {
			return b, err
		}
	}
	if f, ok := member(v, "brokerName"); ok {
		if b.BrokerName, err = text(f, what+".brokerName"); err != nil {
			return b, err
		}
	}
	if f, ok := member(v, "zoneName"); ok {
		if b.ZoneName, err = text(f, what+".zoneName"); err != nil {
			return b, err
		}
	}
	b.BrokerAddrs = map[int64]string{}
	if f, ok := member(v, "brokerAddrs"); ok {
		if err := expect(f, fjson.Object, what+".brokerAddrs"); err != nil {
			return b, err
		}
		for _, m := range f.Members {
			id, err := strconv.ParseInt(m.Key, 10, 64)
			if err != nil {
				return b, fmt.Errorf("%s.brokerAddrs: broker id %q is not an integer", what, m.Key)
			}
			if b.BrokerAddrs[id], err = text(m.Value, what+".brokerAddrs."+m.Key); err != nil {
				return b, err
			}
		}
	}
	return b, nil
}

// DecodeClusterInfo reads a GET_BROKER_CLUSTER_INFO answer.
func DecodeClusterInfo(data []byte) (*ClusterInfo, error) {
	ci, err := decodeClusterInfo(data)
	if err != nil {
		return nil, answerErr("cluster info", err)
	}
	return ci, nil
}

func decodeClusterInfo(data []byte) (*ClusterInfo, error) {
	doc, err := parseDoc(data)
	if err != nil {
		return nil, err
	}
	if err := expect(doc, fjson.Object, "the answer"); err != nil {
		return nil, err
	}
	ci := &ClusterInfo{BrokerAddrTable: map[string]BrokerData{}, ClusterAddrTable: map[string][]string{}}
	if t, ok := member(doc, "brokerAddrTable"); ok {
		if err := expect(t, fjson.Object, "brokerAddrTable"); err != nil {
			return nil, err
		}
		for _, m := range t.Members {
			b, err := readBrokerData(m.Value, "brokerAddrTable."+m.Key)
			if err != nil {
				return nil, err
			}
			if b.BrokerName == "" {
				b.BrokerName = m.Key
			}
			ci.BrokerAddrTable[m.Key] = b
		}
	}
	if t, ok := member(doc, "clusterAddrTable"); ok {
		if err := expect(t, fjson.Object, "clusterAddrTable"); err != nil {
			return nil, err
		}
		for _, m := range t.Members {
			names, err := stringList(m.Value, "clusterAddrTable."+m.Key)
			if err != nil {
				return nil, err
			}
			slices.Sort(names)
			ci.ClusterAddrTable[m.Key] = names
		}
	}
	return ci, nil
}

// DecodeTopicList reads a TopicList answer (GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
// GET_TOPICS_BY_CLUSTER), sorted.
func DecodeTopicList(data []byte) ([]string, error) {
	doc, err := parseDoc(data)
	if err == nil {
		err = expect(doc, fjson.Object, "the answer")
	}
	var topics []string
	if err == nil {
		if l, ok := member(doc, "topicList"); ok {
			topics, err = stringList(l, "topicList")
		}
	}
	if err != nil {
		return nil, answerErr("topic list", err)
	}
	slices.Sort(topics)
	return slices.Compact(topics), nil
}

// DecodeTopicRouteData reads a GET_ROUTEINFO_BY_TOPIC answer.
func DecodeTopicRouteData(data []byte) (*TopicRouteData, error) {
	rd, err := decodeTopicRouteData(data)
	if err != nil {
		return nil, answerErr("topic route", err)
	}
	return rd, nil
}

func decodeTopicRouteData(data []byte) (*TopicRouteData, error) {
	doc, err := parseDoc(data)
	if err != nil {
		return nil, err
	}
	if err := expect(doc, fjson.Object, "the answer"); err != nil {
		return nil, err
	}
	rd := &TopicRouteData{}
	if f, ok := member(doc, "orderTopicConf"); ok {
		if rd.OrderTopicConf, err = text(f, "orderTopicConf"); err != nil {
			return nil, err
		}
	}
	if f, ok := member(doc, "brokerDatas"); ok {
		if err := expect(f, fjson.Array, "brokerDatas"); err != nil {
			return nil, err
		}
		for i, it := range f.Items {
			b, err := readBrokerData(it, fmt.Sprintf("brokerDatas[%d]", i))
			if err != nil {
				return nil, err
			}
			rd.BrokerDatas = append(rd.BrokerDatas, b)
		}
	}
	if f, ok := member(doc, "queueDatas"); ok {
		if err := expect(f, fjson.Array, "queueDatas"); err != nil {
			return nil, err
		}
		for i, it := range f.Items {
			q, err := readQueueData(it, fmt.Sprintf("queueDatas[%d]", i))
			if err != nil {
				return nil, err
			}
			rd.QueueDatas = append(rd.QueueDatas, q)
		}
	}
	if f, ok := member(doc, "filterServerTable"); ok {
		if err := expect(f, fjson.Object, "filterServerTable"); err != nil {
			return nil, err
		}
		for _, m := range f.Members {
			servers, err := stringList(m.Value, "filterServerTable."+m.Key)
			if err != nil {
				return nil, err
			}
			if rd.FilterServerTable == nil {
				rd.FilterServerTable = map[string][]string{}
			}
			rd.FilterServerTable[m.Key] = servers
		}
	}
	slices.SortFunc(rd.BrokerDatas, func(a, b BrokerData) int { return cmp.Compare(a.BrokerName, b.BrokerName) })
	slices.SortFunc(rd.QueueDatas, func(a, b QueueData) int { return cmp.Compare(a.BrokerName, b.BrokerName) })
	return rd, nil
}

func readQueueData(v fjson.Value, what string) (QueueData, error) {
	var q QueueData
	if err := expect(v, fjson.Object, what); err != nil {
		return q, err
	}
	if f, ok := member(v, "brokerName"); ok {
		s, err := text(f, what+".brokerName")
		if err != nil {
			return q, err
		}
		q.BrokerName = s
	}
	for _, field := range []struct {
		names []string
		dst   *int32
	}{
		{[]string{"readQueueNums"}, &q.ReadQueueNums},
		{[]string{"writeQueueNums"}, &q.WriteQueueNums},
		{[]string{"perm"}, &q.Perm},
		// fastjson reads the 4.x misspelling too.
		{[]string{"topicSysFlag", "topicSynFlag"}, &q.TopicSysFlag},
	} {
		for _, name := range field.names {
			if f, ok := member(v, name); ok {
				n, err := integer(f, what+"."+name, 32)
				if err != nil {
					return q, err
				}
				*field.dst = int32(n)
			}
		}
	}
	return q, nil
}

// DecodeKVTable reads a GET_KVLIST_BY_NAMESPACE answer, Java's KVTable.
func DecodeKVTable(data []byte) (map[string]string, error) {
	doc, err := parseDoc(data)
	if err == nil {
		err = expect(doc, fjson.Object, "the answer")
	}
	out := map[string]string{}
	if err == nil {
		if t, ok := member(doc, "table"); ok {
			if err = expect(t, fjson.Object, "table"); err == nil {
				for _, m := range t.Members {
					if out[m.Key], err = text(m.Value, "table."+m.Key); err != nil {
						break
					}
				}
			}
		}
	}
	if err != nil {
		return nil, answerErr("KV table", err)
	}
	return out, nil
}
