package migrate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// commentWidth is where comments wrap, indentation included.
const commentWidth = 78

// YAML is the NameServerCluster as a YAML document with comments: a header
// naming the NameService, what was not carried over above spec, and notes
// above the fields carried over with a caveat. Fields left at their zero
// value are left out, so the operator's defaults apply.
func (r *Result) YAML() ([]byte, error) {
	b, err := json.Marshal(r.Cluster)
	if err != nil {
		return nil, fmt.Errorf("encoding the NameServerCluster: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("encoding the NameServerCluster: %w", err)
	}
	blockStyle(&doc)
	root := doc.Content[0]
	// apiVersion first, as manifests have it (TypeMeta marshals kind first).
	if i := slices.IndexFunc(root.Content, func(n *yaml.Node) bool { return n.Value == "apiVersion" }); i > 0 && i%2 == 0 {
		pair := slices.Clone(root.Content[i : i+2])
		root.Content = slices.Insert(slices.Delete(root.Content, i, i+2), 0, pair...)
	}
	// Zero values of the API's non-pointer fields, which json.Marshal
	// writes anyway; nested objects are copies of the input, kept as
	// written (an empty label selector there means "every pod").
	deleteKey(root, "status")
	if meta := value(root, "metadata"); meta != nil {
		deleteKey(meta, "creationTimestamp")
	}
	spec := value(root, "spec")
	if spec != nil {
		for i := 0; i < len(spec.Content); i += 2 {
			if v := spec.Content[i+1]; v.Kind == yaml.MappingNode && len(v.Content) == 0 {
				spec.Content = append(spec.Content[:i], spec.Content[i+2:]...)
				i -= 2
			}
		}
	}

	head := []string{fmt.Sprintf("NameServerCluster converted by kubectl nsc migrate from the NameService %s (%s). Review every comment before applying it; docs/migrate.md describes the whole move.", r.Source, NameServiceKind.GroupVersion())}
	if len(r.OldAddrs) > 0 {
		head = append(head, "The NameService's peers when converted (status.nameServers), the list its brokers were given: "+strings.Join(r.OldAddrs, ";"))
	}
	doc.HeadComment = comment(head, 0)
	for path, notes := range r.notes {
		parent, key, _ := strings.Cut(path, ".")
		if k := keyNode(value(root, parent), key); k != nil {
			k.HeadComment = comment(notes, 2)
		} else {
			return nil, fmt.Errorf("a note on %s, which the output does not hold", path)
		}
	}
	if len(r.Skipped) > 0 {
		lines := []string{"Not carried over from the NameService:"}
		for _, s := range r.Skipped {
			lines = append(lines, "- "+s.Field+": "+s.Why)
		}
		if k := keyNode(root, "spec"); k != nil {
			k.HeadComment = comment(lines, 0)
		}
	}

	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("writing YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("writing YAML: %w", err)
	}
	return out.Bytes(), nil
}

// blockStyle undoes the flow style and quotes of the JSON the tree was
// read from; the encoder quotes what needs it.
func blockStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		blockStyle(c)
	}
}

func keyNode(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i]
		}
	}
	return nil
}

func value(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func deleteKey(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}

// comment wraps paragraphs into "# " lines that fit commentWidth at the
// given indentation; a paragraph starting with "- " continues indented.
func comment(paragraphs []string, indent int) string {
	var lines []string
	width := commentWidth - indent - len("# ")
	for _, p := range paragraphs {
		cont := ""
		if strings.HasPrefix(p, "- ") {
			cont = "  "
		}
		line := ""
		for _, w := range strings.Fields(p) {
			switch {
			case line == "":
				line = w
			case len(line)+1+len(w) > width:
				lines = append(lines, "# "+line)
				line = cont + w
			default:
				line += " " + w
			}
		}
		if line != "" {
			lines = append(lines, "# "+line)
		}
	}
	return strings.Join(lines, "\n")
}
