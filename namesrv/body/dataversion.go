package body

import (
	"fmt"

	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
)

// DataVersion identifies a broker's topic metadata revision. Two versions are
// equal when all three fields are (4.9 brokers send no stateVersion: 0).
type DataVersion struct {
	StateVersion int64
	Timestamp    int64
	Counter      int64
}

// AppendDataVersion writes a DataVersion.
func AppendDataVersion(dst []byte, dv DataVersion) []byte {
	dst = append(dst, `{"counter":`...)
	dst = fjson.AppendInt(dst, dv.Counter)
	dst = append(dst, `,"stateVersion":`...)
	dst = fjson.AppendInt(dst, dv.StateVersion)
	dst = append(dst, `,"timestamp":`...)
	dst = fjson.AppendInt(dst, dv.Timestamp)
	return append(dst, '}')
}

func readDataVersion(r *fjson.Reader) DataVersion {
	var dv DataVersion
	for key := range r.Members() {
		switch string(key) {
		case "counter":
			dv.Counter = r.Int64()
		case "timestamp":
			dv.Timestamp = r.Int64()
		case "stateVersion":
			dv.StateVersion = r.Int64()
		default:
			r.Skip()
		}
	}
	return dv
}

// DecodeDataVersion decodes a DataVersion body (QUERY_DATA_VERSION).
func DecodeDataVersion(data []byte) (DataVersion, error) {
	r := fjson.NewReader(data)
	dv := readDataVersion(r)
	if err := r.End(); err != nil {
		return DataVersion{}, fmt.Errorf("decode data version: %w", err)
	}
	return dv, nil
}
