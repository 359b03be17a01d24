package body

import (
	"fmt"
	"slices"

	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
)

// TopicList is the answer to the topic-list queries
// (GET_ALL_TOPIC_LIST_FROM_NAMESERVER, GET_TOPICS_BY_CLUSTER and the
// system and unit topic lists), Java's TopicList.
type TopicList struct {
	// Topics is Java's Set: sorted, each topic once.
	Topics []string
	// BrokerAddr is written only when set: it is set only in the
	// GET_SYSTEM_TOPIC_LIST_FROM_NS answer.
	BrokerAddr string
}

// AppendTopicList writes a TopicList in the legacy dialect, which Java
// always uses for it.
func AppendTopicList(dst []byte, tl *TopicList) []byte {
	dst = append(dst, '{')
	if tl.BrokerAddr != "" {
		dst = append(dst, `"brokerAddr":`...)
		dst = fjson.AppendString(dst, tl.BrokerAddr, fjson.Legacy)
		dst = append(dst, ',')
	}
	dst = append(dst, `"topicList":`...)
	dst = appendStrings(dst, tl.Topics, fjson.Legacy)
	return append(dst, '}')
}

// DecodeTopicList reads a TopicList answer, as this NameServer and Java's
// write it, in either dialect; Java's answers list the topics in hash
// order, which comes out sorted.
func DecodeTopicList(data []byte) (*TopicList, error) {
	r := fjson.NewReader(data)
	tl := &TopicList{}
	for key := range r.Members() {
		switch string(key) {
		case "topicList":
			tl.Topics = readStringList(r)
			slices.Sort(tl.Topics)
			tl.Topics = slices.Compact(tl.Topics)
		case "brokerAddr":
			tl.BrokerAddr = readString(r)
		default:
			r.Skip()
		}
	}
	if err := r.End(); err != nil {
		return nil, fmt.Errorf("decode topic list: %w", err)
	}
	return tl, nil
}
