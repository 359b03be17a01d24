package nsc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/kube-namesrv/kube-namesrv/internal/migrate"
	"github.com/kube-namesrv/kube-namesrv/internal/nsadmin"
)

// MigrateFieldManager owns the fields `kubectl nsc migrate --apply` writes.
const MigrateFieldManager = "kubectl-nsc-migrate"

const migrateUsage = "kubectl nsc migrate [NAMESERVICE] [-n NAMESPACE] [-f FILE] [--name NAME] [--apply [--dry-run]]"

const migrateHelp = `Converts a NameService of apache/rocketmq-operator (rocketmq.apache.org/v1alpha1)
into a NameServerCluster and prints it as YAML, with a comment on every field
it could not carry over and why. The NameService is read from the cluster
(NAMESERVICE may be left out when the namespace holds only one) or, with -f,
from a file of manifests ("-" reads stdin), as kubectl apply -f takes them.

The NameServerCluster is named NAMESERVICE-nsc unless --name says otherwise:
both run side by side during a move, and the NameService's StatefulSet has
its name. It never sets spec.image: the NameService's Java image cannot run
as these peers.

Nothing is written to the cluster unless --apply is given: the result is then
applied server-side with the field manager ` + MigrateFieldManager + `, and
--apply --dry-run has the API server validate it without storing it.
docs/migrate.md describes the whole move.

Exit codes:
  0  converted (and applied, with --apply)
  2  usage error: bad flags or arguments; nothing was read or written
  3  the NameService could not be read or converted, or the apply failed`

// migrateCommand runs kubectl nsc migrate.
func (f *Frontend) migrateCommand(args []string, sio nsadmin.IO) int {
	fs := pflag.NewFlagSet("migrate", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	f.bindKube(fs, "namespace of the NameService, and of the NameServerCluster (default: the kubeconfig's)")
	file := fs.StringP("filename", "f", "", `read the NameService from this file of manifests ("-": stdin) instead of the cluster`)
	name := fs.String("name", "", "name of the NameServerCluster (default: the NameService's name followed by "+migrate.NameSuffix+")")
	apply := fs.Bool("apply", false, "apply the result to the cluster (server-side apply); without it nothing is written")
	dryRun := fs.Bool("dry-run", false, "with --apply: have the API server validate the result without storing it")
	help := fs.BoolP("help", "h", false, "print this help")
	usage := func(format string, a ...any) int {
		fmt.Fprintf(sio.Stderr, "kubectl nsc migrate: "+format+"\nusage: %s\n", append(a, migrateUsage)...)
		return nsadmin.ExitUsage
	}
	if err := fs.Parse(args); err != nil {
		return usage("%v", err)
	}
	if *help {
		fmt.Fprintf(sio.Stdout, "usage: %s\n\n%s\n\nFlags:\n%s", migrateUsage, migrateHelp, fs.FlagUsages())
		return nsadmin.ExitOK
	}
	if fs.NArg() > 1 {
		return usage("one NameService at a time, got %q", fs.Args())
	}
	if *dryRun && !*apply {
		return usage("--dry-run goes with --apply (without --apply nothing is written anyway)")
	}
	if f.namespace != "" {
		if errs := validation.IsDNS1123Label(f.namespace); len(errs) > 0 {
			return usage("namespace %q: %s", f.namespace, strings.Join(errs, "; "))
		}
	}
	if *name != "" {
		if err := migrate.CheckName(*name); err != nil {
			return usage("--name: %v", err)
		}
	}
	var nsName string
	if fs.NArg() == 1 {
		nsName = fs.Arg(0)
	}

	ctx := context.Background()
	fail := func(err error) int {
		var ue *nsadmin.UsageError
		if errors.As(err, &ue) {
			return usage("%v", err)
		}
		fmt.Fprintf(sio.Stderr, "kubectl nsc migrate: %v\n", err)
		return nsadmin.ExitFailed
	}
	var src *unstructured.Unstructured
	var err error
	if *file != "" {
		src, err = f.readNameServiceFile(*file, nsName)
	} else {
		src, err = f.getNameService(ctx, nsName)
	}
	if err != nil {
		return fail(err)
	}
	r, err := migrate.Convert(src, migrate.Options{Name: *name, Namespace: f.namespace})
	if err != nil {
		return fail(err)
	}
	out, err := r.YAML()
	if err != nil {
		return fail(err)
	}
	if _, err := sio.Stdout.Write(out); err != nil {
		return fail(fmt.Errorf("writing: %w", err))
	}
	if !*apply {
		return nsadmin.ExitOK
	}
	if err := f.applyCluster(ctx, out, *dryRun, sio); err != nil {
		return fail(err)
	}
	return nsadmin.ExitOK
}

// readNameServiceFile reads the NameService from a file of manifests.
func (f *Frontend) readNameServiceFile(path, name string) (*unstructured.Unstructured, error) {
	var in io.Reader
	what := path
	if path == "-" {
		what = "stdin"
		in = f.stdin
		if in == nil {
			in = os.Stdin
		}
	} else {
		fh, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer fh.Close()
		in = fh
	}
	nss, others, err := migrate.Decode(in)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	u, err := migrate.Select(nss, name)
	var nf *migrate.NotFoundError
	var amb *migrate.AmbiguousError
	switch {
	case errors.As(err, &amb):
		return nil, &nsadmin.UsageError{Msg: fmt.Sprintf("%s holds %v", what, err)}
	case errors.As(err, &nf):
		msg := fmt.Sprintf("%s: %v (%s)", what, err, migrate.NameServiceKind.GroupVersion())
		if len(others) > 0 {
			msg += "; it holds " + strings.Join(others, ", ")
		}
		return nil, errors.New(msg)
	case err != nil:
		return nil, err
	}
	if ns := u.GetNamespace(); ns != "" && f.namespace != "" && ns != f.namespace {
		return nil, &nsadmin.UsageError{Msg: fmt.Sprintf("the NameService %s is in namespace %s, not %s (-n)", u.GetName(), ns, f.namespace)}
	}
	return u, nil
}

// getNameService reads the NameService from the cluster.
func (f *Frontend) getNameService(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	client, ns, err := f.connect()
	if err != nil {
		return nil, err
	}
	res := client.Resource(migrate.NameServiceResource).Namespace(ns)
	if name != "" {
		u, err := res.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, nameServiceAPIError(err, fmt.Sprintf("NameService %s/%s", ns, name), "get")
		}
		return u, nil
	}
	l, err := res.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nameServiceAPIError(err, "NameServices in namespace "+ns, "list")
	}
	items := make([]*unstructured.Unstructured, len(l.Items))
	for i := range l.Items {
		items[i] = &l.Items[i]
	}
	u, err := migrate.Select(items, "")
	var amb *migrate.AmbiguousError
	switch {
	case errors.As(err, &amb):
		return nil, &nsadmin.UsageError{Msg: fmt.Sprintf("namespace %s holds %v", ns, err)}
	case err != nil:
		return nil, fmt.Errorf("no NameService in namespace %s (-n selects another, -f reads a file)", ns)
	}
	return u, nil
}

func nameServiceAPIError(err error, what, verb string) error {
	switch {
	case apierrors.IsNotFound(err):
		if strings.Contains(err.Error(), "the server could not find the requested resource") {
			return fmt.Errorf("%s: the API server does not serve NameServices (%s): is apache/rocketmq-operator's CRD installed? -f converts a file instead",
				what, migrate.NameServiceKind.GroupVersion())
		}
		return fmt.Errorf("%s not found", what)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s: forbidden: kubectl nsc migrate needs %s on %s.%s: %w", what, verb,
			migrate.NameServiceResource.Resource, migrate.NameServiceResource.Group, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// applyCluster applies the YAML that was printed, so that what is stored
// is exactly what the user saw, and says what happened on stderr.
func (f *Frontend) applyCluster(ctx context.Context, doc []byte, dryRun bool, sio nsadmin.IO) error {
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
		return fmt.Errorf("reading back the NameServerCluster: %w", err)
	}
	client, ns, err := f.connect()
	if err != nil {
		return err
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(ns)
	}
	ns, name := obj.GetNamespace(), obj.GetName()
	what := fmt.Sprintf("NameServerCluster %s/%s", ns, name)
	res := client.Resource(clustersResource).Namespace(ns)
	before, err := res.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) && !strings.Contains(err.Error(), "the server could not find the requested resource"):
		before = nil
	case err != nil:
		return apiError(err, what, "get")
	}
	opts := metav1.ApplyOptions{FieldManager: MigrateFieldManager}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	after, err := res.Apply(ctx, name, obj, opts)
	if err != nil {
		switch {
		case apierrors.IsConflict(err):
			return fmt.Errorf("%s: another field manager owns fields this would change (kubectl get nsc %s -n %s --show-managed-fields -o yaml shows who); edit that cluster instead: %w", what, name, ns, err)
		case apierrors.IsInvalid(err):
			return fmt.Errorf("%s: refused by the API server (is the installed CRD as new as this plugin?): %w", what, err)
		}
		return apiError(err, what, "patch")
	}
	verb := "created"
	if before != nil {
		verb = "unchanged"
		if appliedChanged(before, after) {
			verb = "configured"
		}
	}
	if dryRun {
		verb += " (dry run: the API server validated it and stored nothing)"
	}
	fmt.Fprintf(sio.Stderr, "kubectl nsc migrate: %s %s (server-side apply, field manager %s)\n", what, verb, MigrateFieldManager)
	return nil
}

// appliedChanged tells whether an apply changed what the applied document
// can hold: the spec, labels and annotations. The resourceVersion would
// not tell: the operator writes the status between the read and the apply
// (often, while the peers start), which is no change of this apply's.
func appliedChanged(before, after *unstructured.Unstructured) bool {
	for _, path := range [][]string{{"spec"}, {"metadata", "labels"}, {"metadata", "annotations"}} {
		b, _, _ := unstructured.NestedFieldNoCopy(before.Object, path...)
		a, _, _ := unstructured.NestedFieldNoCopy(after.Object, path...)
		if !equality.Semantic.DeepEqual(a, b) {
			return true
		}
	}
	return false
}
