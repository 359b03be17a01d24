package pkubelet

import (
	"context"
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// envList is an ordered environment in which a later definition of a name
// replaces the earlier value in place, which is what a container sees when a
// name is defined twice.
type envList struct {
	names  []string
	values map[string]string
}

func newEnvList() *envList { return &envList{values: map[string]string{}} }

func (e *envList) set(name, value string) {
	if _, ok := e.values[name]; !ok {
		e.names = append(e.names, name)
	}
	e.values[name] = value
}

func (e *envList) lookup(name string) (string, bool) {
	v, ok := e.values[name]
	return v, ok
}

// environ renders the list for os/exec.
func (e *envList) environ() []string {
	out := make([]string, 0, len(e.names))
	for _, n := range e.names {
		out = append(out, n+"="+e.values[n])
	}
	return out
}

// envContext is what env resolution needs besides the Pod and the container.
type envContext struct {
	client kubernetes.Interface
	pod    *corev1.Pod
	c      *corev1.Container
	// podIP is the address the process binds (the real one in mapped mode),
	// so that peers exchanging status.podIP can reach each other.
	podIP  string
	hostIP string
	// allocatable fills resourceFieldRef limits a container does not set,
	// as the kubelet does with the Node's allocatable resources.
	allocatable corev1.ResourceList
	// mounts rewrites in-container paths in literal values and in values
	// read from ConfigMaps and Secrets.
	mounts mountTable
}

// resolveEnv adds envFrom, then env, then extra to e, in the kubelet's order
// and with its $(VAR) expansion against what was defined before.
func resolveEnv(ctx context.Context, ec envContext, e *envList, extra []corev1.EnvVar) error {
	for _, from := range ec.c.EnvFrom {
		data, err := envFromData(ctx, ec, from)
		if err != nil {
			return err
		}
		for _, k := range sortedKeys(data) {
			e.set(from.Prefix+k, ec.mounts.rewrite(data[k]))
		}
	}
	for _, list := range [][]corev1.EnvVar{ec.c.Env, extra} {
		for i := range list {
			v, ok, err := envValue(ctx, ec, e, &list[i])
			if err != nil {
				return fmt.Errorf("env %s: %w", list[i].Name, err)
			}
			if ok {
				e.set(list[i].Name, v)
			}
		}
	}
	return nil
}

func envFromData(ctx context.Context, ec envContext, from corev1.EnvFromSource) (map[string]string, error) {
	ns := ec.pod.Namespace
	switch {
	case from.ConfigMapRef != nil:
		cm, err := ec.client.CoreV1().ConfigMaps(ns).Get(ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) && isTrue(from.ConfigMapRef.Optional) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("envFrom configMap %s: %w", from.ConfigMapRef.Name, err)
		}
		return cm.Data, nil
	case from.SecretRef != nil:
		s, err := ec.client.CoreV1().Secrets(ns).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) && isTrue(from.SecretRef.Optional) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("envFrom secret %s: %w", from.SecretRef.Name, err)
		}
		out := make(map[string]string, len(s.Data))
		for k, v := range s.Data {
			out[k] = string(v)
		}
		return out, nil
	}
	return nil, nil
}

// envValue returns the value of one env entry; ok is false when an optional
// reference is missing, in which case the kubelet leaves the name undefined.
func envValue(ctx context.Context, ec envContext, e *envList, v *corev1.EnvVar) (string, bool, error) {
	if v.ValueFrom == nil {
		return expandRewrite(v.Value, e.lookup, ec.mounts), true, nil
	}
	ns := ec.pod.Namespace
	switch src := v.ValueFrom; {
	case src.FieldRef != nil:
		s, err := podField(ec, src.FieldRef.FieldPath)
		return s, err == nil, err
	case src.ResourceFieldRef != nil:
		s, err := resourceField(ec, src.ResourceFieldRef)
		return s, err == nil, err
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, err := ec.client.CoreV1().ConfigMaps(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) && isTrue(ref.Optional) {
			return "", false, nil
		}
		if err != nil {
			return "", false, fmt.Errorf("configMap %s: %w", ref.Name, err)
		}
		if s, ok := cm.Data[ref.Key]; ok {
			return ec.mounts.rewrite(s), true, nil
		}
		if b, ok := cm.BinaryData[ref.Key]; ok {
			return ec.mounts.rewrite(string(b)), true, nil
		}
		if isTrue(ref.Optional) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("configMap %s has no key %q", ref.Name, ref.Key)
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		s, err := ec.client.CoreV1().Secrets(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) && isTrue(ref.Optional) {
			return "", false, nil
		}
		if err != nil {
			return "", false, fmt.Errorf("secret %s: %w", ref.Name, err)
		}
		if b, ok := s.Data[ref.Key]; ok {
			return ec.mounts.rewrite(string(b)), true, nil
		}
		if isTrue(ref.Optional) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("secret %s has no key %q", ref.Name, ref.Key)
	}
	return "", false, fmt.Errorf("unsupported valueFrom")
}

// podField implements the downward API fields a container env may reference.
func podField(ec envContext, path string) (string, error) {
	p := ec.pod
	if key, ok := subscript(path, "metadata.labels"); ok {
		return p.Labels[key], nil
	}
	if key, ok := subscript(path, "metadata.annotations"); ok {
		return p.Annotations[key], nil
	}
	switch path {
	case "metadata.name":
		return p.Name, nil
	case "metadata.namespace":
		return p.Namespace, nil
	case "metadata.uid":
		return string(p.UID), nil
	case "spec.nodeName":
		return p.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return ec.hostIP, nil
	case "status.podIP", "status.podIPs":
		return ec.podIP, nil
	}
	return "", fmt.Errorf("unsupported fieldRef %q", path)
}

// subscript parses `prefix['key']`.
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}

// resourceField approximates the kubelet's resourceFieldRef: a limit the
// container does not set is the Node's allocatable amount, a missing request
// is zero, and the value is divided by the divisor rounding up.
func resourceField(ec envContext, ref *corev1.ResourceFieldSelector) (string, error) {
	c := ec.c
	if ref.ContainerName != "" && ref.ContainerName != c.Name {
		c = nil
		for i := range ec.pod.Spec.Containers {
			if ec.pod.Spec.Containers[i].Name == ref.ContainerName {
				c = &ec.pod.Spec.Containers[i]
			}
		}
		if c == nil {
			return "", fmt.Errorf("resourceFieldRef: no container %q", ref.ContainerName)
		}
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported resourceFieldRef %q", ref.Resource)
	}
	res := corev1.ResourceName(name)
	var q resource.Quantity
	if kind == "limits" {
		if v, ok := c.Resources.Limits[res]; ok {
			q = v
		} else {
			q = ec.allocatable[res]
		}
	} else if v, ok := c.Resources.Requests[res]; ok {
		q = v
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if res == corev1.ResourceCPU {
		return fmt.Sprint(int64(math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue())))), nil
	}
	return fmt.Sprint(int64(math.Ceil(float64(q.Value()) / float64(divisor.Value())))), nil
}

func isTrue(b *bool) bool { return b != nil && *b }
