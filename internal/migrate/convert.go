package migrate

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	sigsjson "sigs.k8s.io/json"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
)

// nameServiceSpec mirrors the spec of a NameService, as apache/rocketmq-
// operator defines it (pkg/apis/rocketmq/v1alpha1/nameservice_types.go
// there). Its json names are the fields this package knows; any other field
// of an input is reported as not carried over.
type nameServiceSpec struct {
	Size                     *int32                         `json:"size"`
	NameServiceImage         string                         `json:"nameServiceImage"`
	ImagePullPolicy          corev1.PullPolicy              `json:"imagePullPolicy"`
	HostNetwork              bool                           `json:"hostNetwork"`
	DNSPolicy                corev1.DNSPolicy               `json:"dnsPolicy"`
	Resources                corev1.ResourceRequirements    `json:"resources"`
	StorageMode              string                         `json:"storageMode"`
	HostPath                 string                         `json:"hostPath"`
	Env                      []corev1.EnvVar                `json:"env"`
	VolumeClaimTemplates     []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates"`
	PodSecurityContext       *corev1.PodSecurityContext     `json:"securityContext"`
	PodAnnotations           map[string]string              `json:"podAnnotations"`
	ContainerSecurityContext *corev1.SecurityContext        `json:"containerSecurityContext"`
	ImagePullSecrets         []corev1.LocalObjectReference  `json:"imagePullSecrets"`
	Affinity                 *corev1.Affinity               `json:"affinity"`
	Tolerations              []corev1.Toleration            `json:"tolerations"`
	NodeSelector             map[string]string              `json:"nodeSelector"`
	PriorityClassName        string                         `json:"priorityClassName"`
	ServiceAccountName       string                         `json:"serviceAccountName"`
}

// knownFields are the json names of nameServiceSpec.
var knownFields = func() []string {
	t := reflect.TypeFor[nameServiceSpec]()
	out := make([]string, t.NumField())
	for i := range out {
		out[i], _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
	}
	return out
}()

// What apache/rocketmq-operator puts on the pods of a NameService, and the
// fixed port it publishes in status.nameServers (ip only).
const (
	sourceAppLabel      = "app"
	sourceAppValue      = "name_service"
	sourceInstanceLabel = "name_service_cr"
	sourcePort          = "9876"
	// sourceLogDir is where a NameService mounts its volume: the Java
	// NameServer's logs, not its KV store (~/namesrv/kvConfig.json).
	sourceLogDir = "/root/logs"
	// legacyStorageClass is the annotation older claims name their class by.
	legacyStorageClass = "volume.beta.kubernetes.io/storage-class"
	lastApplied        = "kubectl.kubernetes.io/last-applied-configuration"
)

// NameSuffix is added to a NameService's name for the NameServerCluster's
// by default: both run side by side during a move, and a NameService's
// StatefulSet has the NameService's name, as a NameServerCluster's has its
// own.
const NameSuffix = "-nsc"

// Options adjust a conversion.
type Options struct {
	// Name of the NameServerCluster; empty means the NameService's name
	// followed by NameSuffix.
	Name string
	// Namespace of the NameServerCluster when the NameService has none
	// (a file without metadata.namespace).
	Namespace string
}

// Skipped is a NameService field that was not carried over.
type Skipped struct {
	// Field is the NameService's field, with its value where that helps.
	Field string
	// Why it was not carried over, and what to do instead if anything.
	Why string
}

// Result is a conversion.
type Result struct {
	// Cluster is the NameServerCluster; Spec.Image is always empty.
	Cluster *v1alpha1.NameServerCluster
	// Source is the NameService as namespace/name (name alone without a
	// namespace).
	Source string
	// OldAddrs are the NameService's peers from its status, as ip:port:
	// the list its brokers were given.
	OldAddrs []string
	// Skipped lists what was not carried over, in the NameService's field
	// order.
	Skipped []Skipped
	// notes are comments on fields that were carried over, by the path
	// of the output field (spec.resources).
	notes map[string][]string
}

func (r *Result) skip(field, why string, args ...any) {
	r.Skipped = append(r.Skipped, Skipped{Field: field, Why: fmt.Sprintf(why, args...)})
}

func (r *Result) note(path, text string, args ...any) {
	r.notes[path] = append(r.notes[path], fmt.Sprintf(text, args...))
}

// Notes are the comments on carried-over fields, by output path.
func (r *Result) Notes() map[string][]string { return r.notes }

// InputError is a NameService this package cannot read, or options that do
// not fit it.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

// Convert converts one NameService.
func Convert(ns *unstructured.Unstructured, o Options) (*Result, error) {
	source := ns.GetName()
	if ns.GetNamespace() != "" {
		source = ns.GetNamespace() + "/" + source
	}
	specMap, _, err := unstructured.NestedMap(ns.Object, "spec")
	if err != nil {
		return nil, &InputError{Msg: fmt.Sprintf("NameService %s: spec is not an object", source)}
	}
	var spec nameServiceSpec
	// Case-sensitive, as the API server reads it: a "Size" is not size
	// (and is reported as a field this converter does not know).
	if b, err := json.Marshal(specMap); err != nil {
		return nil, &InputError{Msg: fmt.Sprintf("NameService %s: %v", source, err)}
	} else if err := sigsjson.UnmarshalCaseSensitivePreserveInts(b, &spec); err != nil {
		return nil, &InputError{Msg: fmt.Sprintf("NameService %s has a spec this converter cannot read: %v", source, err)}
	}

	name := o.Name
	if name == "" {
		name = ns.GetName() + NameSuffix
	}
	if err := CheckName(name); err != nil {
		msg := err.Error()
		if o.Name == "" {
			msg += " (pick another with --name)"
		}
		return nil, &InputError{Msg: msg}
	}
	namespace := ns.GetNamespace()
	if namespace == "" {
		namespace = o.Namespace
	}

	r := &Result{
		Source: source,
		Cluster: &v1alpha1.NameServerCluster{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "NameServerCluster"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		},
		notes: map[string][]string{},
	}
	if o.Name == "" {
		r.note("metadata.name", "Not the NameService's name: its StatefulSet %s would clash with this cluster's, and both run side by side until the NameService is retired.", ns.GetName())
	}
	ips, _, _ := unstructured.NestedStringSlice(ns.Object, "status", "nameServers")
	for _, ip := range ips {
		r.OldAddrs = append(r.OldAddrs, ip+":"+sourcePort)
	}

	c := &r.Cluster.Spec
	r.size(spec.Size, c)
	r.image(spec, c)
	c.HostNetwork = spec.HostNetwork
	if spec.HostNetwork {
		r.note("spec.hostNetwork", "Each peer opens its remoting port (9876) and its HTTP port (8080: health, metrics, the address server) on its node; the Java NameServer opened 9876 only, so check 8080 is free on the nodes, or set spec.ports.http. While the NameService's peers run on the host network too, they hold 9876 on their nodes: the new peers need other nodes, or another spec.ports.remoting. The published addresses are the nodes' IPs.")
	}
	r.dnsPolicy(spec, c)
	c.Resources = spec.Resources
	if len(spec.Resources.Limits)+len(spec.Resources.Requests) > 0 {
		r.note("spec.resources", "Sized for the Java NameServer's JVM. namesrv needs far less (about 10 MiB plus 0.8 KiB per topic entry; docs/operator.md, \"Size a NameServerCluster\", has the table), and its GOMEMLIMIT follows the memory limit.")
	}
	r.storage(spec, c)
	r.env(spec.Env, c)
	if spec.PodSecurityContext != nil && !reflect.ValueOf(*spec.PodSecurityContext).IsZero() {
		c.PodSecurityContext = spec.PodSecurityContext
		r.note("spec.podSecurityContext", "From securityContext. It is merged field by field over the operator's defaults (non-root user 65532, seccomp RuntimeDefault); settings the Java image needed, such as runAsUser: 0, can go.")
	}
	if spec.ContainerSecurityContext != nil && !reflect.ValueOf(*spec.ContainerSecurityContext).IsZero() {
		c.ContainerSecurityContext = spec.ContainerSecurityContext
		r.note("spec.containerSecurityContext", "Merged field by field over the operator's defaults (no privilege escalation, no capabilities, read-only root filesystem).")
	}
	c.PodAnnotations = spec.PodAnnotations
	if len(spec.ImagePullSecrets) > 0 {
		c.ImagePullSecrets = spec.ImagePullSecrets
		r.note("spec.imagePullSecrets", "They now pull this project's image: keep those its registry needs.")
	}
	c.Affinity = r.affinity(spec.Affinity, ns.GetName())
	c.Tolerations = spec.Tolerations
	c.NodeSelector = spec.NodeSelector
	c.PriorityClassName = spec.PriorityClassName
	c.ServiceAccountName = spec.ServiceAccountName

	r.unknownFields(specMap)
	var meta []string
	if len(ns.GetLabels()) > 0 {
		meta = append(meta, "labels")
	}
	for k := range ns.GetAnnotations() {
		if k != lastApplied {
			meta = append(meta, "annotations")
			break
		}
	}
	if len(meta) > 0 {
		r.skip("metadata."+strings.Join(meta, ", metadata."), "not copied: tools such as Helm and Argo CD recognise the objects they manage by them.")
	}
	return r, nil
}

// CheckName says why name cannot name a NameServerCluster (the CRD's
// rules on metadata.name), or returns nil.
func CheckName(name string) error {
	msg := ""
	switch {
	case len(name) > 52:
		msg = "longer than 52 characters (pod names and their StatefulSet revision labels must fit in 63)"
	case name == "" || name[0] < 'a' || name[0] > 'z' || name[len(name)-1] == '-' ||
		strings.ContainsFunc(name, func(r rune) bool { return (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' }):
		msg = "must start with a lowercase letter and hold only lowercase letters, digits and '-' (not at the end)"
	default:
		return nil
	}
	return fmt.Errorf("NameServerCluster name %q: %s", name, msg)
}

func (r *Result) size(size *int32, c *v1alpha1.NameServerClusterSpec) {
	switch {
	case size == nil || *size < 1:
		n := int32(0)
		if size != nil {
			n = *size
		}
		r.skip(fmt.Sprintf("size %d", n), "a NameServerCluster runs at least one peer; replicas is left at its default (3).")
	case *size > 64:
		r.skip(fmt.Sprintf("size %d", *size), "a NameServerCluster runs at most 64 peers; replicas is left at its default (3).")
	default:
		c.Replicas = ptr.To(*size)
		if *size == 1 {
			r.note("spec.replicas", "From size. One peer leaves brokers and clients without a NameServer while it restarts: two or more keep serving through rolls.")
		}
	}
}

func (r *Result) image(spec nameServiceSpec, c *v1alpha1.NameServerClusterSpec) {
	if spec.NameServiceImage != "" {
		r.skip("nameServiceImage "+spec.NameServiceImage, "a Java NameServer image. These peers run /namesrv of this project's image, which the operator picks (its own version), so spec.image is left unset; the operator refuses a Java RocketMQ image there.")
	}
	switch spec.ImagePullPolicy {
	case "":
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
		c.ImagePullPolicy = spec.ImagePullPolicy
	default:
		r.skip("imagePullPolicy "+string(spec.ImagePullPolicy), "not Always, IfNotPresent or Never.")
	}
}

func (r *Result) dnsPolicy(spec nameServiceSpec, c *v1alpha1.NameServerClusterSpec) {
	p := spec.DNSPolicy
	switch {
	case spec.HostNetwork && (p == "" || p == corev1.DNSClusterFirst):
		// Kubernetes gives a pod on the host network with ClusterFirst
		// the node's resolver; a NameServerCluster refuses that pair.
		field := "dnsPolicy " + string(p)
		if p == "" {
			field = "dnsPolicy unset"
		}
		r.skip(field, "with hostNetwork, Kubernetes gave the NameService's pods the node's resolver (ClusterFirst falls back to Default there). Unset here means ClusterFirstWithHostNet, which resolves cluster names too; set dnsPolicy: Default to keep the node's resolver.")
	case p == "":
	case p == corev1.DNSClusterFirst || p == corev1.DNSClusterFirstWithHostNet || p == corev1.DNSDefault:
		c.DNSPolicy = p
	case p == corev1.DNSNone:
		r.skip("dnsPolicy None", "it needs a dnsConfig, which neither a NameService nor a NameServerCluster has (the NameService's pods could not have been created).")
	default:
		r.skip("dnsPolicy "+string(p), "not a DNS policy (ClusterFirst, ClusterFirstWithHostNet or Default).")
	}
}

func (r *Result) storage(spec nameServiceSpec, c *v1alpha1.NameServerClusterSpec) {
	templates := spec.VolumeClaimTemplates
	switch spec.StorageMode {
	case "StorageClass":
		if len(templates) == 0 {
			r.skip("storageMode StorageClass", "without volumeClaimTemplates there is no claim to carry over; the peers keep their KV store in an emptyDir.")
			return
		}
		t := templates[0]
		if len(templates) > 1 {
			var extra []string
			for _, t := range templates[1:] {
				extra = append(extra, t.Name)
			}
			r.skip("volumeClaimTemplates "+strings.Join(extra, ", "), "the NameService mounted only the first claim template.")
		}
		if _, ok := t.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
			r.skip("volumeClaimTemplates "+t.Name, "no resources.requests.storage, which a NameServerCluster's claim needs; the peers keep their KV store in an emptyDir.")
			return
		}
		pvc := *t.Spec.DeepCopy()
		var how []string
		if pvc.StorageClassName == nil && t.Annotations[legacyStorageClass] != "" {
			pvc.StorageClassName = ptr.To(t.Annotations[legacyStorageClass])
			how = append(how, "its storage class from the annotation "+legacyStorageClass)
		}
		if pvc.VolumeName != "" {
			how = append(how, "without volumeName "+pvc.VolumeName+" (every peer's claim would want that one volume)")
			pvc.VolumeName = ""
		}
		c.Storage = &v1alpha1.Storage{VolumeClaimTemplate: &v1alpha1.VolumeClaimTemplate{Spec: pvc}}
		from := "From storageMode StorageClass and volumeClaimTemplates " + t.Name
		if len(how) > 0 {
			from += ", " + strings.Join(how, ", ")
		}
		r.note("spec.storage", "%s. The NameService's volume held the Java NameServer's logs (%s), not its KV store, so there is nothing in it to move; here it holds the KV store (kvConfig.json), a few KiB, and logs go to stdout: a smaller size does as well.", from, sourceLogDir)
	case "EmptyDir":
		if len(templates) > 0 {
			r.skip("volumeClaimTemplates "+templates[0].Name, "unused with storageMode EmptyDir (the NameService took only the volume's name from it). These peers also keep their data in an emptyDir when spec.storage is unset.")
		}
	default:
		field := "storageMode " + spec.StorageMode
		why := ""
		switch spec.StorageMode {
		case "HostPath":
		case "":
			field = "storageMode unset"
			why = "the NameService then used a hostPath (its default). "
		default:
			why = "not EmptyDir, HostPath or StorageClass, which the NameService took for HostPath. "
		}
		if spec.HostPath != "" {
			field += ", hostPath " + spec.HostPath
		}
		if len(templates) > 0 {
			field += ", volumeClaimTemplates " + templates[0].Name
		}
		body := "A directory of the node ties each peer to one node and is not carried over. The NameService mounted it at " + sourceLogDir +
			" for the Java NameServer's logs; its KV store was not on it, so there is nothing in it to move. These peers keep their KV store in an emptyDir; for one that survives pod restarts, add spec.storage.volumeClaimTemplate with a StorageClass."
		if why == "" {
			body = "a" + body[1:]
		}
		r.skip(field, "%s", why+body)
	}
}

func (r *Result) unknownFields(spec map[string]any) {
	var unknown []string
	for k := range spec {
		if !slices.Contains(knownFields, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		r.skip(k, "not a NameService field this converter knows (a newer or patched apache/rocketmq-operator?).")
	}
}

// affinity carries a over, with every pod label selector that picks the
// NameService's pods by their labels changed to pick this cluster's.
func (r *Result) affinity(a *corev1.Affinity, source string) *corev1.Affinity {
	if a == nil {
		return nil
	}
	a = a.DeepCopy()
	target := render.SelectorLabels(r.Cluster)
	var changed bool
	rewrite := func(sel *metav1.LabelSelector) {
		if rewriteSelector(sel, source, target) {
			changed = true
		}
	}
	for _, pa := range []*corev1.PodAffinity{a.PodAffinity, (*corev1.PodAffinity)(a.PodAntiAffinity)} {
		if pa == nil {
			continue
		}
		for i := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
			rewrite(pa.RequiredDuringSchedulingIgnoredDuringExecution[i].LabelSelector)
		}
		for i := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
			rewrite(pa.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm.LabelSelector)
		}
	}
	if changed {
		r.note("spec.affinity", "Pod selectors that picked the NameService's pods (%s=%s, %s=%s) now pick this cluster's (%s=%s, %s=%s).",
			sourceAppLabel, sourceAppValue, sourceInstanceLabel, source,
			render.LabelName, target[render.LabelName], render.LabelInstance, target[render.LabelInstance])
	}
	return a
}

// rewriteSelector replaces, in sel, the NameService's pod labels by this
// cluster's: app=name_service (every NameService's pods) becomes the
// name label, name_service_cr=<source> the instance label. A selector of
// another NameService's pods is left alone.
func rewriteSelector(sel *metav1.LabelSelector, source string, target map[string]string) bool {
	if sel == nil {
		return false
	}
	var app, instance bool
	if v, ok := sel.MatchLabels[sourceAppLabel]; ok && v == sourceAppValue {
		delete(sel.MatchLabels, sourceAppLabel)
		app = true
	}
	if v, ok := sel.MatchLabels[sourceInstanceLabel]; ok && v == source {
		delete(sel.MatchLabels, sourceInstanceLabel)
		instance = true
	}
	sel.MatchExpressions = slices.DeleteFunc(sel.MatchExpressions, func(e metav1.LabelSelectorRequirement) bool {
		if e.Operator != metav1.LabelSelectorOpIn || len(e.Values) != 1 {
			return false
		}
		switch {
		case e.Key == sourceAppLabel && e.Values[0] == sourceAppValue:
			app = true
			return true
		case e.Key == sourceInstanceLabel && e.Values[0] == source:
			instance = true
			return true
		}
		return false
	})
	if !app && !instance {
		return false
	}
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	// The instance label alone would also pick pods of other programs
	// that share the cluster's name.
	sel.MatchLabels[render.LabelName] = target[render.LabelName]
	if instance {
		sel.MatchLabels[render.LabelInstance] = target[render.LabelInstance]
	}
	return true
}
