package body

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
)

// QueueData is a broker's queue layout for one topic.
type QueueData struct {
	BrokerName     string
	ReadQueueNums  int32
	WriteQueueNums int32
	Perm           int32
	TopicSysFlag   int32
}

// BrokerAddr is one member of a broker group.
type BrokerAddr struct {
	ID   int64
	Addr string
}

// BrokerData is a broker group: one name, its master (id 0) and slaves.
type BrokerData struct {
	Cluster    string
	BrokerName string
	// Addrs is sorted by ID.
	Addrs    []BrokerAddr
	ZoneName string
	// ActingMaster is written only when Modern is set: the field exists
	// since 5.0, and leaving it out for 4.x brokers keeps the answer
	// byte-identical to what a 4.9 NameServer writes, while every reader
	// takes an absent field as false.
	ActingMaster bool
	Modern       bool
}

// FilterServers lists the filter servers of one broker address.
type FilterServers struct {
	BrokerAddr string
	Servers    []string
}

// Mapping is a static-topic mapping of one broker name.
type Mapping struct {
	BrokerName string
	Info       *fjson.Value
}

// TopicRouteData is the answer to GET_ROUTEINFO_BY_TOPIC
// (docs/protocol.md#route-body).
type TopicRouteData struct {
	QueueDatas []QueueData
	// BrokerDatas may be shared between routes; never modify them.
	BrokerDatas    []*BrokerData
	FilterServers  []FilterServers
	OrderTopicConf string
	HasOrderConf   bool
	Mappings       []Mapping
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
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return strings.Compare(a.Addr, b.Addr)
	})
}

// DecodeQueueDatas reads the queueDatas of a TopicRouteData body, which is
// what REGISTER_TOPIC_IN_NAMESRV carries.
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
			var q TopicConfig
			readQueueFields(r, "brokerName", &q)
			out = append(out, QueueData{BrokerName: string(q.Name), ReadQueueNums: q.ReadQueueNums,
				WriteQueueNums: q.WriteQueueNums, Perm: q.Perm, TopicSysFlag: q.TopicSysFlag})
		}
	}
	if err := r.End(); err != nil {
		return nil, fmt.Errorf("decode topic route data: %w", err)
	}
	return out, nil
}
