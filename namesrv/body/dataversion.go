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

func readDataVersion(r *fjson.Reader) (DataVersion, error) {
	var dv DataVersion
	if err := r.BeginObject(); err != nil {
		return dv, err
	}
	for {
		key, ok, err := r.NextKey()
		if err != nil {
			return dv, err
		}
		if !ok {
			return dv, nil
		}
		switch string(key) {
		case "counter":
			dv.Counter, err = r.Int64()
		case "timestamp":
			dv.Timestamp, err = r.Int64()
		case "stateVersion":
			dv.StateVersion, err = r.Int64()
		default:
			err = r.Skip()
		}
		if err != nil {
			return dv, fmt.Errorf("%s: %w", key, err)
		}
	}
}

// DecodeDataVersion decodes a DataVersion body (QUERY_DATA_VERSION).
func DecodeDataVersion(data []byte) (DataVersion, error) {
	r := fjson.NewReader(data)
	dv, err := readDataVersion(r)
	if err == nil {
		err = r.End()
	}
	if err != nil {
		return dv, fmt.Errorf("decode data version: %w", err)
	}
	return dv, nil
}
