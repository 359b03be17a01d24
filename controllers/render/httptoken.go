package render

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

// HTTPTokenSecret is the Secret that holds a cluster's bearer token, owned
// by the cluster so that it goes with it. It is created once, never
// applied: the operator may create Secrets but not change them, so a
// token stays what it was created with until someone deletes the Secret
// (docs/security.md, "Rotating the HTTP token"). It is not immutable: the
// kubelet watches only mutable Secrets, and its refresh is what brings a
// rotated token to the running peers.
func HTTPTokenSecret(c *v1alpha1.NameServerCluster, token string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      HTTPTokenSecretName(c),
			Namespace: c.Namespace,
			Labels:    Labels(c),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         v1alpha1.GroupVersion.String(),
				Kind:               "NameServerCluster",
				Name:               c.Name,
				UID:                c.UID,
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{HTTPTokenKey: []byte(token)},
	}
}
