package body

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
)

// The answer types carry json tags with the names of their Java fields, for
// tools that print a decoded answer (nsadmin -o json). The wire form is
// never encoding/json's: it is what the Append functions write.

// QueueData is a broker's queue layout for one topic.
type QueueData struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int32  `json:"readQueueNums"`
	WriteQueueNums int32  `json:"writeQueueNums"`
	Perm           int32  `json:"perm"`
	TopicSysFlag   int32  `json:"topicSysFlag"`
}

// BrokerAddr is one member of a broker group.
type BrokerAddr struct {
	ID   int64
	Addr string
}

// BrokerAddrs are a broker group's members, Java's brokerAddrs map from
// broker id to address.
type BrokerAddrs []BrokerAddr

// BrokerData is a broker group: one name, its master (id 0) and slaves.
type BrokerData struct {
	Cluster    string `json:"cluster"`
	BrokerName string `json:"brokerName"`
	// Addrs is sorted by ID, each ID once.
	Addrs    BrokerAddrs `json:"brokerAddrs"`
	ZoneName string      `json:"zoneName,omitempty"`
	// ActingMaster is written only when Modern is set: the field exists
	// since 5.0, and leaving it out for 4.x brokers keeps the answer
	// byte-identical to what a 4.9 NameServer writes, while every reader
	// takes an absent field as false. A decoded answer sets Modern when
	// it holds the field.
	ActingMaster bool `json:"-"`
	Modern       bool `json:"-"`
}

// FilterServers lists the filter servers of one broker address.
type FilterServers struct {
	BrokerAddr string
	Servers    []string
}

// FilterServerTable is Java's filterServerTable map, sorted by broker
// address.
type FilterServerTable []FilterServers

// Mapping is a static-topic mapping of one broker name.
type Mapping struct {
	BrokerName string
	Info       *fjson.Value
}

// TopicRouteData is the answer to GET_ROUTEINFO_BY_TOPIC
// (docs/protocol.md#route-body).
type TopicRouteData struct {
	// OrderTopicConf is written when HasOrderConf is set.
	OrderTopicConf string      `json:"orderTopicConf,omitempty"`
	QueueDatas     []QueueData `json:"queueDatas"`
	// BrokerDatas may be shared between routes; never modify them.
	BrokerDatas   []*BrokerData     `json:"brokerDatas"`
	FilterServers FilterServerTable `json:"filterServerTable,omitempty"`
	HasOrderConf  bool              `json:"-"`
	// Mappings is Java's topicQueueMappingByBroker, sorted by broker name.
	Mappings []Mapping `json:"-"`
}

// AppendTopicRouteData writes a route in dialect d, keys in the order
// fastjson sorts them.
func AppendTopicRouteData(dst []byte, rd *TopicRouteData, d fjson.Dialect) []byte {
	dst = append(dst, `{"brokerDatas":[`...)
	for i := range rd.BrokerDatas {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendBrokerData(dst, rd.BrokerDatas[i], d)
	}
	dst = append(dst, `],"filterServerTable":{`...)
	for i, fs := range rd.FilterServers {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = fjson.AppendString(dst, fs.BrokerAddr, d)
		dst = append(dst, ':')
		dst = appendStrings(dst, fs.Servers, d)
	}
	dst = append(dst, '}')
	if rd.HasOrderConf {
		dst = append(dst, `,"orderTopicConf":`...)
		dst = fjson.AppendString(dst, rd.OrderTopicConf, d)
	}
	dst = append(dst, `,"queueDatas":[`...)
	for i := range rd.QueueDatas {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendQueueData(dst, &rd.QueueDatas[i], d)
	}
	dst = append(dst, ']')
	if len(rd.Mappings) > 0 {
		dst = append(dst, `,"topicQueueMappingByBroker":{`...)
		for i, m := range rd.Mappings {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = fjson.AppendString(dst, m.BrokerName, d)
			dst = append(dst, ':')
			dst = fjson.AppendValue(dst, m.Info, d)
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// AppendQueueData writes one QueueData.
func AppendQueueData(dst []byte, q *QueueData, d fjson.Dialect) []byte {
	dst = append(dst, `{"brokerName":`...)
	dst = fjson.AppendString(dst, q.BrokerName, d)
	dst = append(dst, `,"perm":`...)
	dst = fjson.AppendInt(dst, int64(q.Perm))
	dst = append(dst, `,"readQueueNums":`...)
	dst = fjson.AppendInt(dst, int64(q.ReadQueueNums))
	dst = append(dst, `,"topicSysFlag":`...)
	dst = fjson.AppendInt(dst, int64(q.TopicSysFlag))
	dst = append(dst, `,"writeQueueNums":`...)
	dst = fjson.AppendInt(dst, int64(q.WriteQueueNums))
	return append(dst, '}')
}

// AppendBrokerData writes one BrokerData.
func AppendBrokerData(dst []byte, b *BrokerData, d fjson.Dialect) []byte {
	dst = append(dst, `{"brokerAddrs":`...)
	dst = appendAddrs(dst, b.Addrs, d)
	dst = append(dst, `,"brokerName":`...)
	dst = fjson.AppendString(dst, b.BrokerName, d)
	dst = append(dst, `,"cluster":`...)
	dst = fjson.AppendString(dst, b.Cluster, d)
	if b.Modern {
		if b.ActingMaster {
			dst = append(dst, `,"enableActingMaster":true`...)
		} else {
			dst = append(dst, `,"enableActingMaster":false`...)
		}
	}
	if b.ZoneName != "" {
		dst = append(dst, `,"zoneName":`...)
		dst = fjson.AppendString(dst, b.ZoneName, d)
	}
	return append(dst, '}')
}

func appendAddrs(dst []byte, addrs []BrokerAddr, d fjson.Dialect) []byte {
	dst = append(dst, '{')
	for i, a := range addrs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = fjson.AppendIntKey(dst, a.ID, d)
		dst = fjson.AppendString(dst, a.Addr, d)
	}
	return append(dst, '}')
}

func appendStrings(dst []byte, list []string, d fjson.Dialect) []byte {
	dst = append(dst, '[')
	for i, s := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = fjson.AppendString(dst, s, d)
	}
	return append(dst, ']')
}

// SortAddrs orders broker addresses by id.
func SortAddrs(addrs []BrokerAddr) {
	slices.SortFunc(addrs, func(a, b BrokerAddr) int {
		if c := compareIDs(a, b); c != 0 {
			return c
		}
		return strings.Compare(a.Addr, b.Addr)
	})
}

func compareIDs(a, b BrokerAddr) int { return cmp.Compare(a.ID, b.ID) }

// DecodeTopicRouteData reads a GET_ROUTEINFO_BY_TOPIC answer in either
// dialect, as this NameServer and Java's (4.x and 5.x) write it, with
// fastjson's leniency (docs/protocol.md#json-dialects). Lists keep their
// order; the maps (brokerAddrs, filterServerTable,
// topicQueueMappingByBroker) come out sorted by key, a repeated key's last
// value winning as in a Java map. A null member counts as absent.
func DecodeTopicRouteData(data []byte) (*TopicRouteData, error) {
	r := fjson.NewReader(data)
	rd := &TopicRouteData{}
	for key := range r.Members() {
		if r.Null() {
			continue
		}
		switch string(key) {
		case "queueDatas":
			rd.QueueDatas = nil
			for range r.Items() {
				rd.QueueDatas = append(rd.QueueDatas, readQueueData(r))
			}
		case "brokerDatas":
			rd.BrokerDatas = nil
			for range r.Items() {
				rd.BrokerDatas = append(rd.BrokerDatas, readBrokerData(r))
			}
		case "filterServerTable":
			rd.FilterServers = nil
			for addr := range r.Members() {
				addr := string(addr)
				rd.FilterServers = append(rd.FilterServers, FilterServers{BrokerAddr: addr, Servers: readStringList(r)})
			}
			rd.FilterServers = sortedLastWins(rd.FilterServers, func(a, b FilterServers) int { return strings.Compare(a.BrokerAddr, b.BrokerAddr) })
		case "orderTopicConf":
			rd.OrderTopicConf, rd.HasOrderConf = readString(r), true
		case "topicQueueMappingByBroker":
			rd.Mappings = nil
			for name := range r.Members() {
				name := string(name)
				if r.Null() {
					continue
				}
				info, _ := r.Value()
				rd.Mappings = append(rd.Mappings, Mapping{BrokerName: name, Info: &info})
			}
			rd.Mappings = sortedLastWins(rd.Mappings, func(a, b Mapping) int { return strings.Compare(a.BrokerName, b.BrokerName) })
		default:
			r.Skip()
		}
	}
	if err := r.End(); err != nil {
		return nil, fmt.Errorf("decode topic route data: %w", err)
	}
	return rd, nil
}

// DecodeQueueDatas reads the queueDatas of a TopicRouteData body, which is
// what REGISTER_TOPIC_IN_NAMESRV carries; the rest of the body is skipped
// unread, as Java's NameServer ignores it.
func DecodeQueueDatas(data []byte) ([]QueueData, error) {
	r := fjson.NewReader(data)
	var out []QueueData
	for key := range r.Members() {
		switch {
		case string(key) != "queueDatas":
			r.Skip()
			continue
		case r.Null():
			continue
		}
		for range r.Items() {
			out = append(out, readQueueData(r))
		}
	}
	if err := r.End(); err != nil {
		return nil, fmt.Errorf("decode topic route data: %w", err)
	}
	return out, nil
}

func readQueueData(r *fjson.Reader) QueueData {
	var q TopicConfig
	readQueueFields(r, "brokerName", &q)
	return QueueData{BrokerName: string(q.Name), ReadQueueNums: q.ReadQueueNums,
		WriteQueueNums: q.WriteQueueNums, Perm: q.Perm, TopicSysFlag: q.TopicSysFlag}
}

func readBrokerData(r *fjson.Reader) *BrokerData {
	b := &BrokerData{}
	for key := range r.Members() {
		if r.Null() {
			continue
		}
		switch string(key) {
		case "cluster":
			b.Cluster = readString(r)
		case "brokerName":
			b.BrokerName = readString(r)
		case "zoneName":
			b.ZoneName = readString(r)
		case "enableActingMaster":
			b.Modern, b.ActingMaster = true, r.Bool()
		case "brokerAddrs":
			b.Addrs = nil
			for id := range r.Members() {
				n, ok := fjson.ParseInt(id)
				if !ok {
					r.Fail("broker id %s is not an integer", fjson.Quote(id))
				}
				b.Addrs = append(b.Addrs, BrokerAddr{ID: n, Addr: readString(r)})
			}
			b.Addrs = sortedLastWins(b.Addrs, compareIDs)
		default:
			r.Skip()
		}
	}
	return b
}

// readString reads a string member the way fastjson fills a String field: a
// number or boolean gives its text, null the empty string.
func readString(r *fjson.Reader) string {
	s, _ := r.Scalar()
	return string(s)
}

// sortedLastWins sorts the entries of a decoded JSON object by key and keeps,
// of a repeated key, the entry read last, as the Java map it was written
// from holds one value per key and fastjson's reader keeps the last.
func sortedLastWins[T any](s []T, compare func(a, b T) int) []T {
	slices.SortStableFunc(s, compare)
	out := s[:0]
	for i := range s {
		if i+1 < len(s) && compare(s[i], s[i+1]) == 0 {
			continue
		}
		out = append(out, s[i])
	}
	return out
}

// MarshalJSON writes the members as Java's map prints in JSON:
// {"0":"10.0.0.1:10911"}.
func (a BrokerAddrs) MarshalJSON() ([]byte, error) {
	m := make(map[int64]string, len(a))
	for _, b := range a {
		m[b.ID] = b.Addr
	}
	return json.Marshal(m)
}

// MarshalJSON writes the table as Java's map prints in JSON.
func (t FilterServerTable) MarshalJSON() ([]byte, error) {
	m := make(map[string][]string, len(t))
	for _, fs := range t {
		m[fs.BrokerAddr] = fs.Servers
	}
	return json.Marshal(m)
}
