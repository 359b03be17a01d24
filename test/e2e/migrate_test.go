//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
	"github.com/kube-namesrv/kube-namesrv/test/e2e/box"
)

const (
	// nameServiceFile is an apache/rocketmq-operator NameService, and
	// nameServiceCRDFile a CRD that lets the box's API server store it.
	nameServiceFile    = "testdata/nameservice.yaml"
	nameServiceCRDFile = "testdata/nameservice-crd.yaml"
	nameServiceCRD     = "nameservices.rocketmq.apache.org"
)

// nameService is what the scenario reads of the NameService manifest: the
// fields it expects the converted cluster's StatefulSet to carry.
type nameService struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Size                 int32                          `json:"size"`
		ImagePullPolicy      corev1.PullPolicy              `json:"imagePullPolicy"`
		Resources            corev1.ResourceRequirements    `json:"resources"`
		VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates"`
		Env                  []corev1.EnvVar                `json:"env"`
		PodAnnotations       map[string]string              `json:"podAnnotations"`
		Tolerations          []corev1.Toleration            `json:"tolerations"`
		NodeSelector         map[string]string              `json:"nodeSelector"`
	} `json:"spec"`
}

// frameMaxLengthOption is the JVM option of the NameService's environment
// that the converter turns into spec.config's frameMaxLength.
var frameMaxLengthOption = regexp.MustCompile(`-Dcom\.rocketmq\.remoting\.frameMaxLength=(\d+)`)

func (s nameService) frameMaxLength(t *testing.T) string {
	t.Helper()
	for _, e := range s.Spec.Env {
		if m := frameMaxLengthOption.FindStringSubmatch(e.Value); m != nil {
			return m[1]
		}
	}
	t.Fatalf("%s sets no -Dcom.rocketmq.remoting.frameMaxLength", nameServiceFile)
	return ""
}

// TestMigratedNameServiceServes follows docs/migrate.md, step 0 and step 1,
// with a NameService of apache/rocketmq-operator: `kubectl nsc migrate`
// converts it from the manifest and from the cluster alike, the API server
// accepts the output as printed, and the cluster it creates runs peers that
// serve a broker and its clients, in a StatefulSet that carries what the
// NameService said (size, resources, storage, pull policy, scheduling,
// annotations, the frame limit of its JVM options).
func TestMigratedNameServiceServes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	var source nameService
	manifest, err := os.ReadFile(nameServiceFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(manifest, &source); err != nil {
		t.Fatalf("%s: %v", nameServiceFile, err)
	}
	installNameServiceCRD(ctx, t)
	ns := createNamespace(ctx, t, "migrate-")
	kubectl(ctx, t, "apply", "-n", ns, "-f", nameServiceFile)

	// Step 0: convert, from the manifest and from the cluster.
	file, err := filepath.Abs(nameServiceFile)
	if err != nil {
		t.Fatal(err)
	}
	fromFile := migrateOK(ctx, t, "migrate", "-f", file, "-n", ns)
	fromCluster := migrateOK(ctx, t, "migrate", source.Metadata.Name, "-n", ns)
	converted := parseCluster(t, fromFile)
	if got := parseCluster(t, fromCluster); !equality.Semantic.DeepEqual(got, converted) {
		t.Errorf("the NameService converted from the cluster differs from the one converted from %s:\n%s\nfrom the file:\n%s", nameServiceFile, fromCluster, fromFile)
	}
	c := nsc{ns: ns, name: source.Metadata.Name + "-nsc", period: render.BrokerRound(converted)}
	if converted.Name != c.name || converted.Namespace != ns || converted.Spec.Image != "" {
		t.Fatalf("converted to %s/%s with image %q, want %s/%s and no image:\n%s", converted.Namespace, converted.Name, converted.Spec.Image, ns, c.name, fromFile)
	}
	if want := source.frameMaxLength(t); string(converted.Spec.Config["frameMaxLength"]) != want {
		t.Errorf("spec.config frameMaxLength = %q, want %s from the JVM options:\n%s", converted.Spec.Config["frameMaxLength"], want, fromFile)
	}
	for _, what := range []string{"nameServiceImage", "env TZ", "-Xmx256m"} {
		if !strings.Contains(fromFile, what) {
			t.Errorf("the output has no comment on %s, which it did not carry over:\n%s", what, fromFile)
		}
	}

	// The file's output names its namespace (-n), so kubectl apply -f
	// needs none; the server-side dry run stores nothing.
	out := filepath.Join(t.TempDir(), c.name+".yaml")
	if err := os.WriteFile(out, []byte(fromFile), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl(ctx, t, "apply", "--server-side", "--dry-run=server", "-f", out)
	_, stderr := migrateOKErr(ctx, t, "migrate", source.Metadata.Name, "-n", ns, "--apply", "--dry-run")
	if !strings.Contains(stderr, "created (dry run") {
		t.Errorf("--apply --dry-run said:\n%s", stderr)
	}
	var stored v1alpha1.NameServerCluster
	if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: c.name}, &stored); err == nil {
		t.Fatalf("the dry runs stored %s", c.name)
	}
	applied, stderr := migrateOKErr(ctx, t, "migrate", source.Metadata.Name, "-n", ns, "--apply")
	if !strings.Contains(stderr, "NameServerCluster "+ns+"/"+c.name+" created") || applied != fromCluster {
		t.Errorf("--apply said:\n%s\nand printed:\n%s\nwant what it printed without --apply:\n%s", stderr, applied, fromCluster)
	}

	// Step 1: the peers start and are published.
	n := int(source.Spec.Size)
	waitPublished(ctx, t, c, n)
	assertCarried(ctx, t, c, source, converted)
	// Applied again, it changes nothing and says so, whatever the operator
	// wrote to the status meanwhile.
	before := generation(ctx, t, c)
	_, stderr = migrateOKErr(ctx, t, "migrate", source.Metadata.Name, "-n", ns, "--apply")
	if after := generation(ctx, t, c); after != before || !strings.Contains(stderr, c.name+" unchanged") {
		t.Errorf("applying the same conversion again: generation %d -> %d, and it said:\n%s", before, after, stderr)
	}

	// A broker on the broker list registers with every peer, and every
	// peer serves its route.
	since := time.Now()
	b := startBroker(ctx, t, c)
	b.waitRegistered(t, c.peers(n), since)
	eventuallyRoutes(ctx, t, c.peers(n))
	assertDocChecks(ctx, t, c, n)

	// Clients on the client list, each staying on the peer it picked,
	// never miss the route.
	fleet := startClients(ctx, t, c, 6)
	eventually(t, answerTimeout, func() (bool, string) {
		var counts []string
		done := true
		for _, p := range c.peers(n) {
			a := fleet.answers(p)
			done = done && a >= 20
			counts = append(counts, fmt.Sprintf("%s: %d", p, a))
		}
		return done, "answers so far, want 20 from every peer: " + strings.Join(counts, ", ")
	})
	judgeClients(t, fleet.stop(), c.peers(n)...)
}

// installNameServiceCRD creates the stand-in NameService CRD, and deletes it
// (with its NameServices) when the test ends.
func installNameServiceCRD(ctx context.Context, t *testing.T) {
	t.Helper()
	kubectl(ctx, t, "apply", "-f", nameServiceCRDFile)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := cl.Kubectl(ctx, "delete", "customresourcedefinition", nameServiceCRD, "--wait=true"); err != nil {
			t.Error(err)
		}
	})
	kubectl(ctx, t, "wait", "--for=condition=Established", "--timeout=60s", "customresourcedefinition/"+nameServiceCRD)
}

// migrateOK runs `kubectl nsc args...`, which must succeed, and returns
// its output.
func migrateOK(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	out, _ := migrateOKErr(ctx, t, args...)
	return out
}

// migrateOKErr is migrateOK that also returns what it said on stderr.
func migrateOKErr(ctx context.Context, t *testing.T, args ...string) (string, string) {
	t.Helper()
	out, errOut, code := kubectlNsc(ctx, t, args...)
	if code != 0 {
		t.Fatalf("kubectl nsc %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errOut)
	}
	return out, errOut
}

// parseCluster reads the NameServerCluster that kubectl nsc migrate printed.
func parseCluster(t *testing.T, doc string) *v1alpha1.NameServerCluster {
	t.Helper()
	var c v1alpha1.NameServerCluster
	if err := yaml.UnmarshalStrict([]byte(doc), &c); err != nil {
		t.Fatalf("the output of kubectl nsc migrate is not a NameServerCluster: %v\n%s", err, doc)
	}
	return &c
}

func generation(ctx context.Context, t *testing.T, c nsc) int64 {
	t.Helper()
	var got v1alpha1.NameServerCluster
	if err := kc.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, &got); err != nil {
		t.Fatal(err)
	}
	return got.Generation
}

// assertCarried checks that the StatefulSet of the converted cluster, and
// its running peers, have what the NameService said.
func assertCarried(ctx context.Context, t *testing.T, c nsc, source nameService, converted *v1alpha1.NameServerCluster) {
	t.Helper()
	sts, err := cl.Clientset.AppsV1().StatefulSets(c.ns).Get(ctx, c.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(sts.Spec.Replicas, -1); got != source.Spec.Size {
		t.Errorf("StatefulSet replicas = %d, want the NameService's size %d", got, source.Spec.Size)
	}
	pod := sts.Spec.Template
	i := slices.IndexFunc(pod.Spec.Containers, func(ct corev1.Container) bool { return ct.Name == render.ContainerName })
	if i < 0 {
		t.Fatalf("the StatefulSet has no %s container", render.ContainerName)
	}
	ctr := pod.Spec.Containers[i]
	if !equality.Semantic.DeepEqual(ctr.Resources, source.Spec.Resources) {
		t.Errorf("container resources = %+v, want the NameService's %+v", ctr.Resources, source.Spec.Resources)
	}
	// The operator's own image, whichever of the suite's two tags it runs.
	if ctr.Image != image && ctr.Image != nextImage {
		t.Errorf("container image = %s, want the operator's (%s or %s)", ctr.Image, image, nextImage)
	}
	if ctr.ImagePullPolicy != source.Spec.ImagePullPolicy {
		t.Errorf("imagePullPolicy = %s, want %s", ctr.ImagePullPolicy, source.Spec.ImagePullPolicy)
	}
	if ctr.SecurityContext == nil || ptr.Deref(ctr.SecurityContext.AllowPrivilegeEscalation, true) {
		t.Errorf("container securityContext = %+v, want allowPrivilegeEscalation false", ctr.SecurityContext)
	}

	want := source.Spec.VolumeClaimTemplates[0].Spec
	if len(sts.Spec.VolumeClaimTemplates) != 1 {
		t.Fatalf("the StatefulSet has %d claim templates, want 1 from the NameService's storageMode StorageClass", len(sts.Spec.VolumeClaimTemplates))
	}
	claim := sts.Spec.VolumeClaimTemplates[0].Spec
	if got := ptr.Deref(claim.StorageClassName, ""); got != box.StorageClass {
		t.Errorf("claim template storageClassName = %q, want %s from the NameService's annotation", got, box.StorageClass)
	}
	if !slices.Equal(claim.AccessModes, want.AccessModes) || !equality.Semantic.DeepEqual(claim.Resources, want.Resources) {
		t.Errorf("claim template %+v, want the NameService's access modes %v and resources %+v", claim, want.AccessModes, want.Resources)
	}

	for k, v := range source.Spec.PodAnnotations {
		if pod.Annotations[k] != v {
			t.Errorf("pod annotation %s = %q, want %q", k, pod.Annotations[k], v)
		}
	}
	for _, tol := range source.Spec.Tolerations {
		if !slices.ContainsFunc(pod.Spec.Tolerations, func(got corev1.Toleration) bool { return equality.Semantic.DeepEqual(got, tol) }) {
			t.Errorf("tolerations %+v lack the NameService's %+v", pod.Spec.Tolerations, tol)
		}
	}
	if !maps.Equal(pod.Spec.NodeSelector, source.Spec.NodeSelector) {
		t.Errorf("nodeSelector = %v, want %v", pod.Spec.NodeSelector, source.Spec.NodeSelector)
	}

	// The anti-affinity picked the NameService's pods by their labels; now
	// it picks this cluster's peers.
	if !equality.Semantic.DeepEqual(pod.Spec.Affinity, converted.Spec.Affinity) {
		t.Errorf("affinity = %+v, want the converted %+v", pod.Spec.Affinity, converted.Spec.Affinity)
	}
	terms := converted.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	if len(terms) != 1 {
		t.Fatalf("converted anti-affinity has %d preferred terms, want the NameService's one", len(terms))
	}
	sel, err := metav1.LabelSelectorAsSelector(terms[0].PodAffinityTerm.LabelSelector)
	if err != nil {
		t.Fatal(err)
	}
	pods := mustPeerPods(ctx, t, c)
	for _, p := range pods {
		if !sel.Matches(labels.Set(p.Labels)) {
			t.Errorf("the anti-affinity selector %s does not pick peer %s (labels %v)", sel, p.Name, p.Labels)
		}
	}

	// The frame limit of the JVM options is the peers' property.
	frame := source.frameMaxLength(t)
	for _, p := range pods {
		if got := namesrvConfig(ctx, t, p.Status.PodIP)["frameMaxLength"]; got != frame {
			t.Errorf("%s: frameMaxLength = %q, want %s", p.Name, got, frame)
		}
	}
}

// assertDocChecks runs the checks docs/migrate.md gives, as written there:
// those of step 1 (kubectl get nsc -o wide, kubectl nsc peers, the broker
// list), and nsadmin inside a new peer against that list, as steps 2 and 4
// verify the brokers.
func assertDocChecks(ctx context.Context, t *testing.T, c nsc, n int) {
	t.Helper()
	// NAME REPLICAS READY PUBLISHED ...: READY and PUBLISHED reach replicas.
	row := kubectlOut(ctx, t, "-n", c.ns, "get", "nsc", c.name, "-o", "wide", "--no-headers")
	if f := strings.Fields(row); len(f) < 4 || f[1] != strconv.Itoa(n) || f[2] != f[1] || f[3] != f[1] {
		t.Errorf("kubectl get nsc %s -o wide: %q, want %d replicas, ready and published", c.name, row, n)
	}
	out := kubectlOut(ctx, t, "-n", c.ns, "get", "configmap", c.brokerConfigMap(), "-o", "jsonpath={.data.namesrvAddr}")
	if want := strings.Join(c.peers(n), ";"); out != want {
		t.Fatalf("broker list %q, want %q", out, want)
	}
	newb := out
	// Every peer ready, published, reachable, route-complete, with the
	// broker: the operator reads the peers' routes once a broker round.
	eventually(t, 2*c.brokerPeriod()+answerTimeout, func() (bool, string) {
		out, errOut, code := kubectlNsc(ctx, t, "peers", c.name, "-n", c.ns, "-o", "json")
		var peers []struct {
			Name                     string
			Ready, Published         bool
			Reachable, RouteComplete *bool
			Brokers                  *int
		}
		if code != 0 {
			return false, fmt.Sprintf("kubectl nsc peers: exit %d\n%s%s", code, out, errOut)
		}
		if err := json.Unmarshal([]byte(out), &peers); err != nil {
			return false, fmt.Sprintf("kubectl nsc peers -o json: %v\n%s", err, out)
		}
		good := 0
		for _, p := range peers {
			if p.Ready && p.Published && ptr.Deref(p.Reachable, false) && ptr.Deref(p.RouteComplete, false) && ptr.Deref(p.Brokers, 0) == 1 {
				good++
			}
		}
		return len(peers) == n && good == n, fmt.Sprintf("kubectl nsc peers: want %d peers, each ready, published, reachable, route-complete with 1 broker:\n%s", n, out)
	})
	list := kubectlOut(ctx, t, "-n", c.ns, "exec", c.pod(0), "--", "/nsadmin", "clusterList", "-n", newb)
	if !slices.ContainsFunc(strings.Split(list, "\n"), func(l string) bool {
		return strings.Contains(l, brokerName) && strings.HasSuffix(strings.TrimSpace(l), fmt.Sprintf("%d/%d", n, n))
	}) {
		t.Errorf("nsadmin clusterList -n $NEWB does not show %s on %d/%d peers:\n%s", brokerName, n, n, list)
	}
	kubectlOut(ctx, t, "-n", c.ns, "exec", c.pod(0), "--", "/nsadmin", "diff", "-n", newb)
}
