// Package migrate converts a NameService of apache/rocketmq-operator
// (rocketmq.apache.org/v1alpha1) into a NameServerCluster that runs the same
// NameServer peers the way this project does, for `kubectl nsc migrate`.
//
// The NameService is read as unstructured data: this module does not import
// that operator's Go types, and a newer or patched CRD may carry fields this
// package does not know. Whatever cannot be carried over (a Java image, JVM
// options, a hostPath, unknown fields) is named in a comment of the YAML it
// writes, with the reason; so is every field carried over with a caveat.
// The result never sets spec.image: the Java image of a NameService cannot
// run as a NameServerCluster's peers, which run /namesrv of this project's
// image.
package migrate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// NameService is the resource and kind of apache/rocketmq-operator's
// NameServer CRD.
var (
	NameServiceResource = schema.GroupVersionResource{Group: "rocketmq.apache.org", Version: "v1alpha1", Resource: "nameservices"}
	NameServiceKind     = NameServiceResource.GroupVersion().WithKind("NameService")
)

// maxInput bounds what Decode reads: manifests of a few objects are
// kilobytes, and a file is read whole before it is parsed.
const maxInput = 16 << 20

// Decode reads YAML or JSON documents (a multi-document file, as kubectl
// apply takes, or the List that kubectl get -o yaml prints) and returns the
// NameServices among them, in input order. Other kinds are skipped; the
// second value names them, for an error that says what the input held.
func Decode(r io.Reader) (nameServices []*unstructured.Unstructured, others []string, err error) {
	data, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading: %w", err)
	}
	if len(data) > maxInput {
		return nil, nil, fmt.Errorf("input larger than %d MiB: not a manifest", maxInput>>20)
	}
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for n := 1; ; n++ {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("document %d: %w", n, err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, nil, fmt.Errorf("document %d: %w", n, err)
		}
		if obj == nil {
			// Empty, or only comments.
			continue
		}
		items := []map[string]any{obj}
		if list, ok := obj["items"].([]any); ok && strings.HasSuffix(kindOf(obj), "List") {
			items = items[:0]
			for i, it := range list {
				m, ok := it.(map[string]any)
				if !ok {
					return nil, nil, fmt.Errorf("document %d: items[%d] is not an object", n, i)
				}
				items = append(items, m)
			}
		}
		for _, it := range items {
			u := &unstructured.Unstructured{Object: it}
			gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
			switch {
			case err != nil:
				return nil, nil, fmt.Errorf("document %d: apiVersion %q: %w", n, u.GetAPIVersion(), err)
			case u.GetKind() == NameServiceKind.Kind && gv.Group == NameServiceKind.Group:
				if gv.Version != NameServiceKind.Version {
					return nil, nil, fmt.Errorf("document %d: NameService %s is %s: only %s is known", n, u.GetName(), u.GetAPIVersion(), NameServiceKind.GroupVersion())
				}
				if name, _, err := unstructured.NestedString(u.Object, "metadata", "name"); err != nil || name == "" {
					return nil, nil, fmt.Errorf("document %d: a NameService without metadata.name (or not a string)", n)
				}
				nameServices = append(nameServices, u)
			default:
				kind := u.GetKind()
				if kind == "" {
					kind = "an object without kind"
				}
				if name := u.GetName(); name != "" {
					kind += " " + name
				}
				others = append(others, kind)
			}
		}
	}
	return nameServices, others, nil
}

func kindOf(obj map[string]any) string {
	k, _ := obj["kind"].(string)
	return k
}

// NotFoundError says which NameService is missing, or that there is none.
type NotFoundError struct{ Msg string }

func (e *NotFoundError) Error() string { return e.Msg }

// AmbiguousError says that several NameServices fit and none was named.
type AmbiguousError struct{ Names []string }

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("%d NameServices (%s): name one", len(e.Names), strings.Join(e.Names, ", "))
}

// Select picks the NameService called name, or the only one when name is
// empty.
func Select(nameServices []*unstructured.Unstructured, name string) (*unstructured.Unstructured, error) {
	if name != "" {
		for _, u := range nameServices {
			if u.GetName() == name {
				return u, nil
			}
		}
		return nil, &NotFoundError{Msg: fmt.Sprintf("no NameService %s", name)}
	}
	switch len(nameServices) {
	case 0:
		return nil, &NotFoundError{Msg: "no NameService"}
	case 1:
		return nameServices[0], nil
	}
	names := make([]string, len(nameServices))
	for i, u := range nameServices {
		names[i] = u.GetName()
	}
	slices.Sort(names)
	return nil, &AmbiguousError{Names: names}
}
