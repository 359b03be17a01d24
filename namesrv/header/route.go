package header

import (
	"strings"

	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
)

// GetRouteInfo is GetRouteInfoRequestHeader (GET_ROUTEINFO_BY_TOPIC, 105),
// with the zone fields Java clients add through an RPC hook
// (docs/protocol.md#get-routeinfo-by-topic). It is decoded on the hot path:
// in one pass over the fields, without allocating, and its byte slices
// alias the command.
type GetRouteInfo struct {
	// Topic is required by Java, which answers a request without one as
	// a missing topic named "null"; HasTopic tells.
	Topic    []byte
	HasTopic bool
	// AcceptStandardJSONOnly asks for the standard JSON dialect whatever
	// the request's version.
	AcceptStandardJSONOnly bool
	// ZoneMode and ZoneName are __ZONE_MODE and __ZONE_NAME.
	ZoneMode bool
	ZoneName []byte
}

// Decode reads the header, which has no field that can be refused. A field
// given twice counts with its last value, as Command.ExtValue has it.
func (h *GetRouteInfo) Decode(cmd *remoting.Command) {
	*h = GetRouteInfo{}
	for i := range cmd.Ext {
		e := &cmd.Ext[i]
		switch string(e.Key) {
		case "topic":
			h.Topic, h.HasTopic = e.Value, true
		case "acceptStandardJsonOnly":
			h.AcceptStandardJSONOnly = fjson.ParseBool(e.Value)
		case "__ZONE_MODE":
			h.ZoneMode = fjson.ParseBool(e.Value)
		case "__ZONE_NAME":
			h.ZoneName = e.Value
		}
	}
}

// Zone is the zone the route is to be filtered by, if any: zone mode on
// and a zone name that is not blank.
func (h *GetRouteInfo) Zone() (string, bool) {
	if !h.ZoneMode {
		return "", false
	}
	z := strings.TrimSpace(string(h.ZoneName))
	return z, z != ""
}
