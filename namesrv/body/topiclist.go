package body

import (
	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
)

// AppendTopicList writes a TopicList; brokerAddr is omitted when empty.
func AppendTopicList(dst []byte, topics []string, brokerAddr string) []byte {
	dst = append(dst, '{')
	if brokerAddr != "" {
		dst = append(dst, `"brokerAddr":`...)
		dst = fjson.AppendString(dst, brokerAddr, fjson.Legacy)
		dst = append(dst, ',')
	}
	dst = append(dst, `"topicList":`...)
	dst = appendStrings(dst, topics, fjson.Legacy)
	return append(dst, '}')
}
