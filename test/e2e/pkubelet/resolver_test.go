package pkubelet

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestImageRepository(t *testing.T) {
	for in, want := range map[string]string{
		"kube-namesrv/kube-namesrv:v0.1.0":         "kube-namesrv/kube-namesrv",
		"kube-namesrv/kube-namesrv":                "kube-namesrv/kube-namesrv",
		"mirror.internal:5000/team/app:v1":         "mirror.internal:5000/team/app",
		"mirror.internal:5000/team/app":            "mirror.internal:5000/team/app",
		"app@sha256:0123abcd":                      "app",
		"team/app:v2@sha256:0123abcd":              "team/app",
		"mirror.internal:5000/app:v1@sha256:abcd0": "mirror.internal:5000/app",
	} {
		if got := ImageRepository(in); got != want {
			t.Errorf("ImageRepository(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestResolverArgv(t *testing.T) {
	r := Resolver{
		Images:   map[string][]string{"kube-namesrv/kube-namesrv": {"/build/namesrv"}, "e2e/tool": {"/build/e2e.test", "tool"}},
		Commands: map[string]string{"/namesrv": "/build/namesrv"},
	}
	for _, tc := range []struct {
		name          string
		image         string
		command, args []string
		want          []string
		wantErr       bool
	}{
		{name: "entrypoint from image", image: "kube-namesrv/kube-namesrv:v1", args: []string{"-c", "x"}, want: []string{"/build/namesrv", "-c", "x"}},
		{name: "entrypoint with its own args", image: "e2e/tool:latest", args: []string{"--x"}, want: []string{"/build/e2e.test", "tool", "--x"}},
		{name: "in-image command mapped", image: "kube-namesrv/kube-namesrv:v1", command: []string{"/namesrv"}, args: []string{"-p"}, want: []string{"/build/namesrv", "-p"}},
		{name: "host command as is", image: "kube-namesrv/kube-namesrv:v1", command: []string{"/bin/sh", "-c", "true"}, want: []string{"/bin/sh", "-c", "true"}},
		{name: "unknown image without command", image: "other/image:v1", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.argv(&corev1.Container{Name: "c", Image: tc.image}, tc.command, tc.args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("argv = %q, want %q", got, tc.want)
			}
		})
	}
	// The map's entrypoint must not be aliased by the result.
	got, _ := r.argv(&corev1.Container{Image: "e2e/tool"}, nil, []string{"a"})
	got[0] = "changed"
	if r.Images["e2e/tool"][0] != "/build/e2e.test" {
		t.Error("argv modified the resolver's entrypoint")
	}
}
