package render

import (
	"fmt"
	"strings"

	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// KVFile renders spec.kvConfig, with the keys an earlier spec declared and
// this one removed (status.kvConfig.removed), as the declared-KV file every
// NameServer reads. It is never part of the pod template's checksum: the
// NameServers follow the mounted file as the kubelet refreshes it, so a
// change restarts no pod.
func KVFile(c *v1alpha1.NameServerCluster) ([]byte, error) {
	f := peerstatus.KVFile{
		Policy:      string(KVConfigPolicy(c)),
		ConfigTable: map[string]map[string]string{},
	}
	for _, e := range c.Spec.KVConfig {
		ns := f.ConfigTable[e.Namespace]
		if ns == nil {
			ns = map[string]string{}
			f.ConfigTable[e.Namespace] = ns
		}
		ns[e.Key] = e.Value
	}
	if s := c.Status.KVConfig; s != nil {
		for _, k := range s.Removed {
			ns, key, ok := strings.Cut(k, "/")
			if !ok {
				continue
			}
			if _, declared := f.ConfigTable[ns][key]; declared {
				// Declared again before every peer confirmed the removal.
				continue
			}
			if f.Removed == nil {
				f.Removed = map[string][]string{}
			}
			f.Removed[ns] = append(f.Removed[ns], key)
		}
	}
	b, err := f.Encode()
	if err != nil {
		return nil, fmt.Errorf("rendering the declared KV config of %s/%s: %w", c.Namespace, c.Name, err)
	}
	return b, nil
}

// KVConfigPolicy is spec.kvConfigPolicy with its default.
func KVConfigPolicy(c *v1alpha1.NameServerCluster) v1alpha1.KVConfigPolicy {
	if c.Spec.KVConfigPolicy == "" {
		return v1alpha1.KVConfigOwned
	}
	return c.Spec.KVConfigPolicy
}

// DeclaredKVKeys are the <namespace>/<key> pairs of spec.kvConfig.
func DeclaredKVKeys(c *v1alpha1.NameServerCluster) []string {
	out := make([]string, 0, len(c.Spec.KVConfig))
	for _, e := range c.Spec.KVConfig {
		out = append(out, e.Namespace+"/"+e.Key)
	}
	return out
}

// KVConfigMap holds the declared-KV file, mounted read-only at
// /etc/namesrv-kv.
func KVConfigMap(c *v1alpha1.NameServerCluster, file []byte) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(KVConfigMapName(c), c.Namespace).
		WithLabels(Labels(c)).
		WithOwnerReferences(ownerReference(c)).
		WithData(map[string]string{KVKey: string(file)})
}
