package migrate

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

// FuzzConvert feeds arbitrary manifests through Decode, Convert and YAML:
// nothing panics, and whatever converts is written as YAML that decodes
// strictly to the same NameServerCluster, without spec.image.
func FuzzConvert(f *testing.F) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range inputs {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		nss, _, err := Decode(bytes.NewReader(in))
		if err != nil {
			return
		}
		for _, ns := range nss {
			r, err := Convert(ns, Options{})
			if err != nil {
				continue
			}
			out, err := r.YAML()
			if err != nil {
				t.Fatalf("YAML: %v", err)
			}
			var back v1alpha1.NameServerCluster
			if err := yaml.UnmarshalStrict(out, &back); err != nil {
				t.Fatalf("output does not decode: %v\n%s", err, out)
			}
			if !equality.Semantic.DeepEqual(&back, r.Cluster) || back.Spec.Image != "" {
				t.Fatalf("output decodes to another cluster:\n%s", out)
			}
		}
	})
}
