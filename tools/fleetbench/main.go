// Command fleetbench measures the operator against a fleet of
// NameServerClusters: the real manager binary runs against a control plane
// of its own (envtest: kube-apiserver and etcd, KUBEBUILDER_ASSETS), and
// the bench plays the StatefulSet controller and the kubelet (it creates
// each StatefulSet's pods, ready at loopback addresses 127.10.x.y) and
// every NameServer peer (one HTTP server answers /routes/summary for all
// of them, telling them apart by the address a connection arrived at). For
// each fleet size it reports the manager's API requests per minute in
// steady state by method, the single-object GETs the API server served
// (reads around the cache), the manager's CPU and memory, the time from a
// pod turning unready to its removal from its cluster's client list, and
// the time from a spec change of every cluster to each StatefulSet's new
// pod template. docs/benchmarks.md ("Fleet") holds the figures and
// `make bench-fleet` the command.
//
//	fleetbench -manager bin/manager -clusters 100,300,1000 -doc docs/benchmarks.md -csv docs/fleet.csv
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

type options struct {
	manager  string
	crds     string
	clusters []int
	replicas int
	brokers  int
	round    time.Duration
	warmup   time.Duration
	window   time.Duration
	workers  int

	unready       int
	unreadySpread time.Duration

	timeout      time.Duration
	phaseTimeout time.Duration

	tuning map[string]string

	csv, doc string
	command  string
}

// httpClient scrapes the manager's metrics.
var httpClient = &http.Client{Timeout: 30 * time.Second}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fleetbench:", err)
		os.Exit(1)
	}
}

func run(args []string, out, log io.Writer) error {
	o, err := parseFlags(args, log)
	if err != nil {
		return err
	}
	// The bench's cache logs through controller-runtime; its reflectors'
	// complaints while the control plane stops are not the report.
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, a ...any) {
		fmt.Fprintf(log, "%s fleetbench: %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, a...))
	}

	rep := report{command: o.command, machine: readMachine(), started: time.Now().UTC()}
	for _, n := range o.clusters {
		res, err := runFleet(ctx, o, n, logf)
		if err != nil {
			return fmt.Errorf("fleet of %d clusters: %w", n, err)
		}
		rep.results = append(rep.results, res)
	}
	fmt.Fprint(out, rep.markdown())
	if o.csv != "" {
		if err := os.WriteFile(o.csv, []byte(rep.csv()), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", o.csv, err)
		}
	}
	if o.doc != "" {
		if err := rewriteDoc(o.doc, rep.markdown()); err != nil {
			return err
		}
	}
	return nil
}

func parseFlags(args []string, log io.Writer) (*options, error) {
	o := &options{tuning: map[string]string{}}
	fs := flag.NewFlagSet("fleetbench", flag.ContinueOnError)
	fs.SetOutput(log)
	var clusters string
	fs.StringVar(&o.manager, "manager", "bin/manager", "the manager binary to measure")
	fs.StringVar(&o.crds, "crds", "config/crd/bases", "the directory of the CRDs")
	fs.StringVar(&clusters, "clusters", "100", "fleet sizes, comma-separated; each is measured from a fresh control plane and manager")
	fs.IntVar(&o.replicas, "replicas", 2, "peers per cluster")
	fs.IntVar(&o.brokers, "brokers", 2, "brokers each simulated peer holds")
	fs.DurationVar(&o.round, "round", 10*time.Second, "the broker round, spec.brokerHeartbeatSeconds: the operator reads each peer once a round (whole seconds)")
	fs.DurationVar(&o.warmup, "warmup", 0, "wait after every client list is published, before the steady window (0: two rounds)")
	fs.DurationVar(&o.window, "window", 0, "the steady window (0: three rounds; at least two rounds)")
	fs.IntVar(&o.workers, "workers", 16, "requests the bench sends at once when it creates or changes the fleet")
	fs.IntVar(&o.unready, "unready", 200, "clusters whose last pod turns unready (at most one per cluster)")
	fs.DurationVar(&o.unreadySpread, "unready-spread", 10*time.Second, "the unready pods turn unready one after the other over this time (0: all at once)")
	fs.DurationVar(&o.timeout, "timeout", time.Hour, "bound of one fleet size's run")
	fs.DurationVar(&o.phaseTimeout, "phase-timeout", 30*time.Minute, "bound of each wait for the operator")
	for _, f := range tuningFlags {
		fs.Func(f, "passed to the manager as --"+f+" (the manager must have the flag; unset: its default)", func(v string) error {
			if _, err := strconv.ParseFloat(v, 64); err != nil {
				return fmt.Errorf("not a number: %q", v)
			}
			o.tuning[f] = v
			return nil
		})
	}
	fs.StringVar(&o.csv, "csv", "", "also write the figures as CSV to this file")
	fs.StringVar(&o.doc, "doc", "", "replace the report between the fleet:begin and fleet:end lines of this Markdown file")
	fs.StringVar(&o.command, "command", "", "the command line to name in the report (default: fleetbench and its arguments)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, s := range strings.Split(clusters, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-clusters: %q is not a positive number", s)
		}
		o.clusters = append(o.clusters, n)
	}
	switch {
	case o.replicas < 1:
		return nil, errors.New("-replicas must be at least 1")
	case o.round < time.Second || o.round > 600*time.Second || o.round%time.Second != 0:
		return nil, fmt.Errorf("-round %v: spec.brokerHeartbeatSeconds takes whole seconds from 1 to 600", o.round)
	case o.window != 0 && o.window < 2*o.round:
		return nil, fmt.Errorf("-window %v is shorter than two rounds (%v)", o.window, 2*o.round)
	case o.unready < 0 || o.unreadySpread < 0 || o.workers < 1:
		return nil, errors.New("-unready, -unready-spread and -workers must not be negative, -workers at least 1")
	}
	if o.window == 0 {
		o.window = 3 * o.round
	}
	if o.warmup == 0 {
		o.warmup = 2 * o.round
	}
	if o.command == "" {
		o.command = strings.Join(append([]string{"fleetbench"}, args...), " ")
	}
	var err error
	if o.manager, err = filepath.Abs(o.manager); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(o.manager); err != nil || fi.IsDir() {
		return nil, fmt.Errorf("-manager %s: not a file (make build puts it in bin/)", o.manager)
	}
	return o, nil
}
