package pkubelet

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestResolveEnv(t *testing.T) {
	client := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "cfg"}, Data: map[string]string{"LEVEL": "debug", "PATHVAL": "/data/x"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "sec"}, Data: map[string][]byte{"TOKEN": []byte("s3cret")}},
	)
	yes := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web-0", UID: "u1", Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "n"}},
		Spec:       corev1.PodSpec{NodeName: "fake-node"},
	}
	c := &corev1.Container{
		Name: "main",
		EnvFrom: []corev1.EnvFromSource{
			{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: &yes}},
		},
		Env: []corev1.EnvVar{
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "POD_NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
			{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
			{Name: "NOTE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['note']"}}},
			{Name: "LEVEL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "LEVEL"}}},
			{Name: "DATA", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "PATHVAL"}}},
			{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}, Key: "TOKEN"}}},
			{Name: "OPT", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}, Key: "NOPE", Optional: &yes}}},
			{Name: "ADDR", Value: "$(POD_NAME).$(POD_NS):9876"},
			{Name: "KV", Value: "/data/kv.json"},
			{Name: "LEVEL", Value: "override-$(LEVEL)"},
		},
	}
	e := newEnvList()
	e.set("PKUBELET_POD_IP", "10.244.0.7")
	ec := envContext{client: client, pod: pod, c: c, podIP: "10.244.0.7", hostIP: "10.244.0.1",
		mounts: newMountTable([]mount{{path: "/data", hostPath: "/host/pvc"}})}
	extra := []corev1.EnvVar{{Name: "BIND", Value: "$(PKUBELET_POD_IP)"}}
	if err := resolveEnv(context.Background(), ec, e, extra); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"CFG_LEVEL": "debug", "CFG_PATHVAL": "/host/pvc/x",
		"POD_NAME": "web-0", "POD_NS": "demo", "POD_IP": "10.244.0.7", "APP": "web", "NOTE": "n",
		"LEVEL": "override-debug", "DATA": "/host/pvc/x", "TOKEN": "s3cret",
		"ADDR": "web-0.demo:9876", "KV": "/host/pvc/kv.json", "BIND": "10.244.0.7",
	}
	for k, v := range want {
		if got, ok := e.lookup(k); !ok || got != v {
			t.Errorf("%s = %q (defined %v), want %q", k, got, ok, v)
		}
	}
	if _, ok := e.lookup("OPT"); ok {
		t.Error("an optional missing key must leave the variable undefined")
	}
	// A redefinition keeps the first position, like a map-backed container env.
	env := e.environ()
	if i := slices.Index(env, "LEVEL=override-debug"); i < 0 || i > slices.Index(env, "TOKEN=s3cret") {
		t.Errorf("LEVEL moved or missing in %q", env)
	}
}

func TestResolveEnvErrors(t *testing.T) {
	client := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "cfg"}})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "p"}}
	for name, v := range map[string]corev1.EnvVar{
		"missing configmap": {Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Key: "k"}}},
		"missing key":       {Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "k"}}},
		"unknown field":     {Name: "X", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.bogus"}}},
	} {
		c := &corev1.Container{Name: "c", Env: []corev1.EnvVar{v}}
		err := resolveEnv(context.Background(), envContext{client: client, pod: pod, c: c}, newEnvList(), nil)
		if err == nil || !strings.Contains(err.Error(), "env X") {
			t.Errorf("%s: err = %v, want an error naming the variable", name, err)
		}
	}
}

func TestResourceField(t *testing.T) {
	c := &corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
	}}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{*c}}}
	ec := envContext{pod: pod, c: c, allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}}
	for _, tc := range []struct {
		res, divisor, want string
	}{
		{"limits.memory", "", "536870912"},
		{"limits.memory", "1Mi", "512"},
		{"requests.cpu", "", "1"}, // 250m rounds up to one core
		{"requests.cpu", "1m", "250"},
		{"limits.cpu", "", "64"}, // unset limit: the Node's allocatable
		{"requests.memory", "", "0"},
	} {
		ref := &corev1.ResourceFieldSelector{Resource: tc.res}
		if tc.divisor != "" {
			ref.Divisor = resource.MustParse(tc.divisor)
		}
		got, err := resourceField(ec, ref)
		if err != nil || got != tc.want {
			t.Errorf("%s / %q = %q, %v; want %q", tc.res, tc.divisor, got, err, tc.want)
		}
	}
	if _, err := resourceField(ec, &corev1.ResourceFieldSelector{Resource: "bogus"}); err == nil {
		t.Error("an unknown resource must fail")
	}
}
