package header

import "github.com/kube-namesrv/kube-namesrv/namesrv/remoting"

// The KV codes' fields are required by Java's header classes, but Java
// answers their absence in its own way for each code (a remark, a "null"
// in the not-found remark, or nothing), so they are Strings that may be
// unset and the processor decides (docs/protocol.md#kv-config).

// PutKVConfig is PutKVConfigRequestHeader (PUT_KV_CONFIG, 100).
type PutKVConfig struct {
	Namespace, Key, Value String
}

// Decode reads the header, which has no field that can be refused.
func (h *PutKVConfig) Decode(cmd *remoting.Command) {
	f := fields{cmd: cmd}
	h.Namespace, h.Key, h.Value = f.optional("namespace"), f.optional("key"), f.optional("value")
}

// GetKVConfig is GetKVConfigRequestHeader (GET_KV_CONFIG, 101).
type GetKVConfig struct {
	Namespace, Key String
}

// Decode reads the header, which has no field that can be refused.
func (h *GetKVConfig) Decode(cmd *remoting.Command) {
	f := fields{cmd: cmd}
	h.Namespace, h.Key = f.optional("namespace"), f.optional("key")
}

// DeleteKVConfig is DeleteKVConfigRequestHeader (DELETE_KV_CONFIG, 102).
type DeleteKVConfig struct {
	Namespace, Key String
}

// Decode reads the header, which has no field that can be refused.
func (h *DeleteKVConfig) Decode(cmd *remoting.Command) {
	f := fields{cmd: cmd}
	h.Namespace, h.Key = f.optional("namespace"), f.optional("key")
}

// GetKVListByNamespace is GetKVListByNamespaceRequestHeader
// (GET_KVLIST_BY_NAMESPACE, 219).
type GetKVListByNamespace struct {
	Namespace String
}

// Decode reads the header, which has no field that can be refused.
func (h *GetKVListByNamespace) Decode(cmd *remoting.Command) {
	f := fields{cmd: cmd}
	h.Namespace = f.optional("namespace")
}
