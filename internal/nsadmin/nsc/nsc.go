// Package nsc is nsadmin's Kubernetes frontend, the kubectl plugin
// kubectl-nsc: it takes a NameServerCluster instead of -n, finds its peers
// in the cluster's status, and runs nsadmin's subcommands against them.
//
// Peers are reached by their stable DNS names by default, which resolve
// inside the cluster only; --use-pod-ip uses pod IPs (where they route, as
// from a node or a flat network), --external the addresses the operator
// publishes outside the cluster, and --port-forward port-forwards to the
// pods through the API server, which works wherever kubectl does.
//
// Its own commands are peers, which lists the peers the others use, and
// migrate, which prints (and with --apply applies) the NameServerCluster
// equivalent to an apache/rocketmq-operator NameService (package migrate).
package nsc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/internal/nsadmin"
)

// Resources the plugin reads.
var (
	clustersResource = v1alpha1.GroupVersion.WithResource("nameserverclusters")
	podsResource     = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
)

// cluster is the part of a NameServerCluster the plugin reads. It is
// decoded from JSON on its own, so that status fields of newer operators
// are read without a newer API package.
type cluster struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		TLS *struct {
			Mode string `json:"mode"`
		} `json:"tls"`
		Ports struct {
			HTTP int `json:"http"`
		} `json:"ports"`
	} `json:"spec"`
	Status struct {
		Peers             []peerStatus `json:"peers"`
		Addresses         []string     `json:"addresses"`
		NamesrvAddr       string       `json:"namesrvAddr"`
		BrokerNamesrvAddr string       `json:"brokerNamesrvAddr"`
	} `json:"status"`
}

// peerStatus is one entry of status.peers. Pointers are what the operator
// may not know yet.
type peerStatus struct {
	Name            string   `json:"name"`
	Ordinal         int      `json:"ordinal"`
	Address         string   `json:"address"`
	PodIP           string   `json:"podIP,omitempty"`
	ExternalAddress string   `json:"externalAddress,omitempty"`
	Ready           bool     `json:"ready"`
	Published       bool     `json:"published"`
	Reachable       *bool    `json:"reachable,omitempty"`
	RouteComplete   *bool    `json:"routeComplete,omitempty"`
	Brokers         *int     `json:"brokers,omitempty"`
	MissingBrokers  []string `json:"missingBrokers,omitempty"`
	Message         string   `json:"message,omitempty"`
}

// Frontend implements nsadmin.Frontend for a NameServerCluster.
type Frontend struct {
	kubeconfig  string
	context     string
	namespace   string
	usePodIP    bool
	external    bool
	portForward bool

	// client is built from the kubeconfig on first use, or set by tests;
	// restConfig is the kubeconfig's, for port-forwards.
	client     dynamic.Interface
	restConfig *rest.Config
	// forwarder opens port-forwards; nil means through the API server of
	// restConfig. Tests set it.
	forwarder forwarder
	// stdin is what migrate -f - reads; nil means os.Stdin.
	stdin io.Reader
}

// New returns the frontend.
func New() *Frontend { return &Frontend{} }

// Name implements nsadmin.Frontend.
func (*Frontend) Name() string { return "kubectl nsc" }

// Args implements nsadmin.Frontend.
func (*Frontend) Args() string { return "[CLUSTER] [-n NAMESPACE]" }

// Help implements nsadmin.Frontend.
func (*Frontend) Help() string {
	return `CLUSTER is a NameServerCluster; it may be left out when the namespace
holds only one. Its peers come from its status (status.peers, or the
published lists of older operators), so -n is kubectl's namespace here, not
mqadmin's NameServer list, and a KV namespace is -s/--kv-namespace. Peers are reached by their DNS names, which
resolve inside the cluster only: from outside, use --port-forward (through
the API server, as kubectl port-forward; it needs pods/portforward), or
--use-pod-ip where pod IPs route, or --external for the addresses published
outside the cluster.
The kubeconfig is found as kubectl finds it ($KUBECONFIG, ~/.kube/config,
--kubeconfig, --context, or the pod's service account inside the cluster).
A cluster with spec.tls.mode Enforcing is spoken to with TLS.

  kubectl nsc peers [CLUSTER]   lists the peers the other commands use
  kubectl nsc migrate [NAMESERVICE]
                                converts a NameService of apache/rocketmq-operator
                                into a NameServerCluster (kubectl nsc migrate -h)`
}

// Bind implements nsadmin.Frontend.
func (f *Frontend) Bind(fs *pflag.FlagSet) {
	f.bindKube(fs, "namespace of the NameServerCluster (default: the kubeconfig's)")
	fs.BoolVar(&f.usePodIP, "use-pod-ip", false, "reach peers by pod IP (with the port of their address) instead of DNS name")
	fs.BoolVar(&f.external, "external", false, "reach peers by the addresses the operator publishes outside the cluster")
	fs.BoolVar(&f.portForward, "port-forward", false, "reach peers through port-forwards to their pods via the API server (from anywhere kubectl works)")
}

func (f *Frontend) bindKube(fs *pflag.FlagSet, namespaceUsage string) {
	fs.StringVarP(&f.namespace, "namespace", "n", "", namespaceUsage)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "path to the kubeconfig file")
	fs.StringVar(&f.context, "context", "", "kubeconfig context to use")
}

// Resolve implements nsadmin.Frontend.
func (f *Frontend) Resolve(ctx context.Context, args []string) (*nsadmin.Target, error) {
	c, err := f.find(ctx, args)
	if err != nil {
		return nil, err
	}
	peers, note, err := f.choosePeers(ctx, c)
	if err != nil {
		return nil, err
	}
	addrs := make([]string, len(peers))
	for i, p := range peers {
		addrs[i] = p.Address
	}
	t := &nsadmin.Target{Addrs: addrs, Note: note, HTTPPort: c.Spec.Ports.HTTP}
	if t.HTTPPort == 0 {
		// The CRD's default.
		t.HTTPPort = 8080
	}
	t.TLS = c.Spec.TLS != nil && strings.EqualFold(c.Spec.TLS.Mode, string(v1alpha1.TLSEnforcing))
	if f.portForward {
		fw := f.forwarder
		if fw == nil {
			fw = apiForwarder(f.restConfig)
		}
		fwd, err := forward(ctx, fw, c.Metadata.Namespace, peers, t.HTTPPort)
		if err != nil {
			return nil, err
		}
		t.Dial, t.Close = fwd.dial, fwd.close
		return t, nil
	}
	if !f.usePodIP && !f.external {
		t.UnreachableHint = "peers are reached by their DNS names, which resolve inside the cluster only: from outside, try --use-pod-ip (where pod IPs route) or --external"
	}
	return t, nil
}

// find reads the NameServerCluster the arguments name.
func (f *Frontend) find(ctx context.Context, args []string) (*cluster, error) {
	if len(args) > 1 {
		return nil, &nsadmin.UsageError{Msg: fmt.Sprintf("one NameServerCluster at a time, got %q", args)}
	}
	if n := countTrue(f.usePodIP, f.external, f.portForward); n > 1 {
		return nil, &nsadmin.UsageError{Msg: "--use-pod-ip, --external and --port-forward exclude each other"}
	}
	if f.namespace != "" {
		if errs := validation.IsDNS1123Label(f.namespace); len(errs) > 0 {
			msg := fmt.Sprintf("namespace %q: %s", f.namespace, strings.Join(errs, "; "))
			if strings.ContainsAny(f.namespace, ":;") {
				msg += ` (in kubectl nsc, -n is kubectl's --namespace: the peers come from the NameServerCluster; give NameServer addresses to nsadmin -n instead)`
			}
			return nil, &nsadmin.UsageError{Msg: msg}
		}
	}
	client, ns, err := f.connect()
	if err != nil {
		return nil, err
	}
	res := client.Resource(clustersResource).Namespace(ns)
	var u *unstructured.Unstructured
	if len(args) == 1 {
		if u, err = res.Get(ctx, args[0], metav1.GetOptions{}); err != nil {
			return nil, apiError(err, fmt.Sprintf("NameServerCluster %s/%s", ns, args[0]), "get")
		}
	} else {
		l, err := res.List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, apiError(err, "NameServerClusters in namespace "+ns, "list")
		}
		var names []string
		for _, it := range l.Items {
			names = append(names, it.GetName())
		}
		switch len(names) {
		case 0:
			return nil, fmt.Errorf("no NameServerCluster in namespace %s (-n selects another)", ns)
		case 1:
			u = &l.Items[0]
		default:
			slices.Sort(names)
			return nil, &nsadmin.UsageError{Msg: fmt.Sprintf("namespace %s holds %d NameServerClusters (%s): name one", ns, len(names), strings.Join(names, ", "))}
		}
	}
	b, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("reading NameServerCluster %s: %w", u.GetName(), err)
	}
	c := &cluster{}
	if err := json.Unmarshal(b, c); err != nil {
		return nil, fmt.Errorf("NameServerCluster %s/%s has a status this plugin cannot read: %w", ns, u.GetName(), err)
	}
	return c, nil
}

func (f *Frontend) connect() (dynamic.Interface, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.context})
	ns := f.namespace
	if ns == "" {
		var err error
		if ns, _, err = cc.Namespace(); err != nil {
			return nil, "", fmt.Errorf("kubeconfig: %w", err)
		}
	}
	if f.client != nil {
		return f.client, ns, nil
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	f.restConfig = cfg
	if f.client, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, "", fmt.Errorf("kubernetes client: %w", err)
	}
	return f.client, ns, nil
}

func apiError(err error, what, verb string) error {
	switch {
	case apierrors.IsNotFound(err):
		if strings.Contains(err.Error(), "the server could not find the requested resource") {
			return fmt.Errorf("%s: the API server does not serve NameServerClusters (is the kube-namesrv CRD installed?)", what)
		}
		return fmt.Errorf("%s not found", what)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s: forbidden: kubectl nsc needs %s on nameserverclusters.%s (and get on pods for --use-pod-ip with older operators): %w",
			what, verb, v1alpha1.GroupVersion.Group, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// choosePeers returns the peers to talk to, with their Address set to what to
// dial, and a note for the reader about peers left out.
func (f *Frontend) choosePeers(ctx context.Context, c *cluster) ([]peerStatus, string, error) {
	name := c.Metadata.Namespace + "/" + c.Metadata.Name
	peers := c.Status.Peers
	fromStatusPeers := len(peers) > 0
	if !fromStatusPeers {
		// An operator without status.peers: every address it publishes,
		// to brokers (which may include peers not serving clients yet)
		// and to clients.
		var seen []string
		for _, a := range slices.Concat(c.Status.Addresses, split(c.Status.NamesrvAddr), split(c.Status.BrokerNamesrvAddr)) {
			if !slices.Contains(seen, a) {
				seen = append(seen, a)
				peers = append(peers, peerStatus{Name: podOf(a), Address: a, Ordinal: -1})
			}
		}
	}
	if len(peers) == 0 {
		return nil, "", fmt.Errorf("NameServerCluster %s lists no peers in its status yet (is the operator running?)", name)
	}
	var out []peerStatus
	var skipped []string
	for _, p := range peers {
		switch {
		case f.external:
			if !fromStatusPeers {
				return nil, "", fmt.Errorf("NameServerCluster %s: --external needs status.peers[].externalAddress, which this operator does not report", name)
			}
			if p.ExternalAddress == "" {
				skipped = append(skipped, p.Name+" (no external address)")
				continue
			}
			p.Address = p.ExternalAddress
		case f.usePodIP:
			ip := p.PodIP
			if ip == "" && !fromStatusPeers {
				var err error
				if ip, err = f.podIP(ctx, c.Metadata.Namespace, p.Name); err != nil {
					return nil, "", err
				}
			}
			_, port, err := net.SplitHostPort(p.Address)
			if ip == "" || err != nil {
				skipped = append(skipped, p.Name+" (no pod IP)")
				continue
			}
			p.Address = net.JoinHostPort(ip, port)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, "", fmt.Errorf("NameServerCluster %s: no peer can be reached this way: %s", name, strings.Join(skipped, ", "))
	}
	note := ""
	if len(skipped) > 0 {
		note = "left out: " + strings.Join(skipped, ", ")
	}
	return out, note, nil
}

func (f *Frontend) podIP(ctx context.Context, ns, pod string) (string, error) {
	client, _, err := f.connect()
	if err != nil {
		return "", err
	}
	u, err := client.Resource(podsResource).Namespace(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return "", apiError(err, "pod "+ns+"/"+pod, "get")
	}
	ip, _, _ := unstructured.NestedString(u.Object, "status", "podIP")
	return ip, nil
}

func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

func split(list string) []string {
	var out []string
	for _, a := range strings.Split(list, ";") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// podOf is the pod of a published address: the first label of
// <pod>.<cluster>-headless.<namespace>.svc.<domain>:<port>.
func podOf(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	pod, _, _ := strings.Cut(host, ".")
	return pod
}

// Main runs kubectl-nsc: `peers` and `migrate` here, every other command
// in nsadmin.
func Main(f *Frontend, args []string, io nsadmin.IO) int {
	if len(args) > 0 {
		switch args[0] {
		case "peers":
			return f.peersCommand(args[1:], io)
		case "migrate":
			return f.migrateCommand(args[1:], io)
		}
	}
	return nsadmin.Main(f, args, io)
}

// peersCommand lists the peers a command would use.
func (f *Frontend) peersCommand(args []string, io nsadmin.IO) int {
	fs := pflag.NewFlagSet("peers", pflag.ContinueOnError)
	fs.SetOutput(io.Stderr)
	f.Bind(fs)
	output := fs.StringP("output", "o", "table", "output format: table or json")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nsadmin.ExitOK
		}
		return nsadmin.ExitUsage
	}
	if *output != "table" && *output != "json" {
		fmt.Fprintf(io.Stderr, "kubectl nsc peers: -o %q: want table or json\n", *output)
		return nsadmin.ExitUsage
	}
	ctx := context.Background()
	c, err := f.find(ctx, fs.Args())
	var peers []peerStatus
	var note string
	if err == nil {
		peers, note, err = f.choosePeers(ctx, c)
	}
	if err != nil {
		fmt.Fprintf(io.Stderr, "kubectl nsc peers: %v\n", err)
		var ue *nsadmin.UsageError
		if errors.As(err, &ue) {
			return nsadmin.ExitUsage
		}
		return nsadmin.ExitFailed
	}
	if note != "" {
		fmt.Fprintf(io.Stderr, "kubectl nsc: note: %s\n", note)
	}
	if *output == "json" {
		b, _ := json.MarshalIndent(peers, "", "  ")
		fmt.Fprintln(io.Stdout, string(b))
		return nsadmin.ExitOK
	}
	printPeers(io.Stdout, peers, len(c.Status.Peers) > 0)
	return nsadmin.ExitOK
}

func printPeers(w io.Writer, peers []peerStatus, full bool) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	if !full {
		fmt.Fprintln(tw, "PEER\tADDRESS")
		for _, p := range peers {
			fmt.Fprintf(tw, "%s\t%s\n", p.Name, p.Address)
		}
		tw.Flush()
		return
	}
	fmt.Fprintln(tw, "PEER\tORDINAL\tADDRESS\tREADY\tPUBLISHED\tREACHABLE\tROUTE-COMPLETE\tBROKERS\tMESSAGE")
	for _, p := range peers {
		brokers := "-"
		if p.Brokers != nil {
			brokers = strconv.Itoa(*p.Brokers)
		}
		msg := p.Message
		if len(p.MissingBrokers) > 0 {
			msg = strings.TrimSpace(msg + " missing: " + strings.Join(p.MissingBrokers, ", "))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%t\t%t\t%s\t%s\t%s\t%s\n", p.Name, p.Ordinal, p.Address, p.Ready, p.Published,
			known(p.Reachable), known(p.RouteComplete), brokers, msg)
	}
	tw.Flush()
}

// known prints a status flag the operator may not have checked yet.
func known(b *bool) string {
	if b == nil {
		return "-"
	}
	return strconv.FormatBool(*b)
}
