// Package nsadmin is an admin tool for RocketMQ NameServers that asks every
// peer at once. Its subcommands keep the names and flags of the Java
// mqadmin's NameServer side (clusterList, topicRoute -t, updateKvConfig -s
// -k -v, wipeWritePerm -b, ...) and print the same tables, with a column
// saying which peers hold each row: NameServer peers never talk to each
// other, so nothing but a tool like this shows that they disagree. diff
// compares whole tables and exits non-zero on any difference.
//
// The same commands serve two programs: nsadmin, given the peers with -n
// like mqadmin, and the kubectl plugin kubectl-nsc, which finds them in a
// NameServerCluster's status. A Frontend supplies the peers.
package nsadmin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/kube-namesrv/kube-namesrv/internal/version"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
)

// Frontend supplies the peers a command talks to.
type Frontend interface {
	// Name is the program as a user types it ("nsadmin", "kubectl nsc").
	Name() string
	// Args describes the positional arguments and the flags that select
	// peers, for usage lines (e.g. "-n ADDRS" or "CLUSTER").
	Args() string
	// Help explains how peers are selected, for `help`.
	Help() string
	// Bind adds the frontend's flags to a command's flag set.
	Bind(fs *pflag.FlagSet)
	// Resolve returns the peers for the positional arguments. A
	// *UsageError means the arguments are wrong.
	Resolve(ctx context.Context, args []string) (*Target, error)
}

// Target is what a Frontend resolved.
type Target struct {
	Addrs []string
	// TLS turns TLS on unless --tls is given explicitly (a
	// NameServerCluster that enforces TLS).
	TLS bool
	// Note is printed on stderr before the command runs.
	Note string
	// UnreachableHint is printed once when a peer cannot be reached.
	UnreachableHint string
	// HTTPPort is the peers' HTTP port, when the frontend knows it.
	HTTPPort int
	// Dial, when set, connects to the peers' addresses (remoting and HTTP)
	// in place of a plain dial: through port-forwards, say.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Close, when set, is called once the command is done with the peers.
	Close func()
}

// UsageError is a mistake in the command line; nothing was sent.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// IO is where a run reads its environment and writes its output.
type IO struct {
	Stdout, Stderr io.Writer
	// Getenv reads the environment (NAMESRV_ADDR, ROCKETMQ_SERIALIZE_TYPE).
	Getenv func(string) string
}

// StdIO is the process's own IO.
func StdIO() IO { return IO{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv} }

// command is one subcommand.
type command struct {
	name    string
	summary string
	// synopsis are its own flags for the usage line.
	synopsis string
	// notes say how the command differs from mqadmin's, for its help.
	notes string
	// new returns the command's state with its flags bound.
	new func(fs *pflag.FlagSet) runner
}

// runner runs a command once its flags are parsed.
type runner interface {
	// check validates the flags; a non-nil error is a usage error.
	check() error
	run(ctx context.Context, ps *Peers) report
}

// report is a command's result: a value marshalled for -o json|yaml, and a
// table for people.
type report interface {
	table(w io.Writer)
	// problems are the peers' failures, written to stderr after the table.
	problems() []*PeerError
	// exitCode is the command's own code when no peer failed (diff's 1).
	exitCode() int
	// notes are remarks for the reader, written to stderr.
	notes() []string
}

// common are the flags of every command.
type common struct {
	output    string
	timeout   time.Duration
	serialize string
	tls       bool
	tlsCA     string
	tlsCert   string
	tlsKey    string
	tlsName   string
	tlsSkip   bool
	help      bool
}

func (c *common) bind(fs *pflag.FlagSet) {
	fs.StringVarP(&c.output, "output", "o", "table", "output format: table, json or yaml")
	fs.DurationVar(&c.timeout, "timeout", 3*time.Second, "time allowed to connect to each peer, and for each request")
	fs.StringVar(&c.serialize, "serialize-type", "", "header encoding of the requests: JSON or ROCKETMQ (default $ROCKETMQ_SERIALIZE_TYPE, else JSON)")
	fs.BoolVar(&c.tls, "tls", false, "connect with TLS (a NameServer in tls.server.mode permissive or enforcing)")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "PEM CA certificates that verify the NameServers' certificates (default: the system's); implies --tls")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "PEM client certificate, for NameServers that verify clients; implies --tls")
	fs.StringVar(&c.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&c.tlsName, "tls-server-name", "", "name to verify the NameServers' certificates against (default: the host of each address)")
	fs.BoolVar(&c.tlsSkip, "tls-insecure-skip-verify", false, "do not verify the NameServers' certificates; implies --tls")
	fs.BoolVarP(&c.help, "help", "h", false, "print this help")
}

func (c *common) connOptions(fs *pflag.FlagSet, getenv func(string) string, t *Target) (ConnOptions, error) {
	o := ConnOptions{Timeout: c.timeout}
	switch c.output {
	case "table", "json", "yaml":
	default:
		return o, usagef("-o %q: want table, json or yaml", c.output)
	}
	if c.timeout <= 0 {
		return o, usagef("--timeout must be positive")
	}
	st := c.serialize
	if !fs.Changed("serialize-type") {
		st = getenv("ROCKETMQ_SERIALIZE_TYPE")
	}
	switch strings.ToUpper(strings.TrimSpace(st)) {
	case "", "JSON":
		o.Serialize = remoting.JSON
	case "ROCKETMQ":
		o.Serialize = remoting.RocketMQ
	default:
		return o, usagef("serialize type %q: want JSON or ROCKETMQ (RocketMQ's rocketmq.serialize.type)", st)
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return o, usagef("--tls-cert and --tls-key go together")
	}
	useTLS := c.tls || c.tlsCA != "" || c.tlsCert != "" || c.tlsSkip
	if !fs.Changed("tls") && t.TLS {
		useTLS = true
	}
	if fs.Changed("tls") && !c.tls && (c.tlsCA != "" || c.tlsCert != "" || c.tlsSkip) {
		return o, usagef("--tls=false contradicts the other --tls-* flags")
	}
	if !useTLS {
		return o, nil
	}
	// InsecureSkipVerify only when asked for by name.
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.tlsName, InsecureSkipVerify: c.tlsSkip}
	if c.tlsCA != "" {
		pem, err := os.ReadFile(c.tlsCA)
		if err != nil {
			return o, usagef("--tls-ca: %v", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return o, usagef("--tls-ca %s holds no PEM certificate", c.tlsCA)
		}
	}
	if c.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
		if err != nil {
			return o, usagef("--tls-cert/--tls-key: %v", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	o.TLS = cfg
	return o, nil
}

// Main runs one command line of frontend f and returns the exit code.
func Main(f Frontend, args []string, io IO) int {
	if io.Getenv == nil {
		io.Getenv = func(string) string { return "" }
	}
	if len(args) == 0 {
		printHelp(f, io.Stderr)
		return ExitUsage
	}
	switch args[0] {
	case "help", "-h", "--help":
		if len(args) > 1 {
			cmd := findCommand(args[1])
			if cmd == nil {
				fmt.Fprintf(io.Stderr, "%s: no command %q; `%s help` lists them\n", f.Name(), args[1], f.Name())
				return ExitUsage
			}
			fs, _, _ := newFlagSet(f, cmd)
			printCommandHelp(f, cmd, fs, io.Stdout)
			return ExitOK
		}
		printHelp(f, io.Stdout)
		return ExitOK
	case "version", "--version":
		fmt.Fprintln(io.Stdout, version.Version)
		return ExitOK
	}
	cmd := findCommand(args[0])
	if cmd == nil {
		fmt.Fprintf(io.Stderr, "%s: no command %q; `%s help` lists them\n", f.Name(), args[0], f.Name())
		return ExitUsage
	}
	fs, c, r := newFlagSet(f, cmd)
	if err := fs.Parse(args[1:]); err != nil {
		fmt.Fprintf(io.Stderr, "%s %s: %v\n", f.Name(), cmd.name, err)
		fmt.Fprintf(io.Stderr, "usage: %s\n", usageLine(f, cmd))
		return ExitUsage
	}
	if c.help {
		printCommandHelp(f, cmd, fs, io.Stdout)
		return ExitOK
	}
	ctx := context.Background()
	code, err := run(ctx, f, fs, c, r, io)
	if err != nil {
		var ue *UsageError
		if errors.As(err, &ue) {
			fmt.Fprintf(io.Stderr, "%s %s: %v\n", f.Name(), cmd.name, err)
			fmt.Fprintf(io.Stderr, "usage: %s\n", usageLine(f, cmd))
			return ExitUsage
		}
		fmt.Fprintf(io.Stderr, "%s %s: %v\n", f.Name(), cmd.name, err)
		return ExitFailed
	}
	return code
}

func newFlagSet(f Frontend, cmd *command) (*pflag.FlagSet, *common, runner) {
	fs := pflag.NewFlagSet(cmd.name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	// The frontend's flags first: a command's flag yields to them
	// (kvNamespaceFlag).
	f.Bind(fs)
	r := cmd.new(fs)
	c := &common{}
	c.bind(fs)
	return fs, c, r
}

func run(ctx context.Context, f Frontend, fs *pflag.FlagSet, c *common, r runner, io IO) (int, error) {
	if err := r.check(); err != nil {
		return 0, err
	}
	// Flag mistakes are reported before the frontend does any work
	// (kubectl nsc reads the API).
	if _, err := c.connOptions(fs, io.Getenv, &Target{}); err != nil {
		return 0, err
	}
	t, err := f.Resolve(ctx, fs.Args())
	if err != nil {
		return 0, err
	}
	if t.Close != nil {
		defer t.Close()
	}
	opts, err := c.connOptions(fs, io.Getenv, t)
	if err != nil {
		return 0, err
	}
	opts.Dial = t.Dial
	if t.Note != "" {
		fmt.Fprintf(io.Stderr, "%s: note: %s\n", f.Name(), t.Note)
	}
	if ta, ok := r.(interface{ useTarget(*Target) }); ok {
		ta.useTarget(t)
	}
	ps := NewPeers(t.Addrs, opts)
	defer ps.Close()
	rep := r.run(ctx, ps)
	if err := render(io.Stdout, c.output, rep); err != nil {
		return 0, err
	}
	for _, n := range rep.notes() {
		fmt.Fprintf(io.Stderr, "%s: note: %s\n", f.Name(), n)
	}
	code := rep.exitCode()
	probs := rep.problems()
	hint := false
	for _, p := range probs {
		fmt.Fprintf(io.Stderr, "%s: %v\n", f.Name(), p)
		hint = hint || p.Kind == Unreachable
	}
	if hint && t.UnreachableHint != "" {
		fmt.Fprintf(io.Stderr, "%s: hint: %s\n", f.Name(), t.UnreachableHint)
	}
	return worst(code, probs), nil
}

// worst folds the peers' failures into the command's exit code.
func worst(code int, probs []*PeerError) int {
	for _, p := range probs {
		if c := p.exitCode(); code == ExitOK || code == ExitDifferent || c == ExitFailed {
			code = c
		}
	}
	return code
}

func render(w io.Writer, format string, rep report) error {
	switch format {
	case "json":
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return fmt.Errorf("render json: %w", err)
		}
		_, err = w.Write(append(b, '\n'))
		return err
	case "yaml":
		b, err := yaml.Marshal(rep)
		if err != nil {
			return fmt.Errorf("render yaml: %w", err)
		}
		_, err = w.Write(b)
		return err
	}
	rep.table(w)
	return nil
}

func findCommand(name string) *command {
	i := slices.IndexFunc(commands, func(c *command) bool { return c.name == name })
	if i < 0 {
		return nil
	}
	return commands[i]
}

func usageLine(f Frontend, cmd *command) string {
	s := f.Name() + " " + cmd.name + " " + f.Args()
	if cmd.synopsis != "" {
		s += " " + cmd.synopsis
	}
	return s + " [flags]"
}

func printHelp(f Frontend, w io.Writer) {
	fmt.Fprintf(w, "usage: %s COMMAND %s [flags]\n\n", f.Name(), f.Args())
	fmt.Fprintf(w, "Asks every NameServer peer in parallel and shows where they differ.\n\n")
	fmt.Fprintln(w, f.Help())
	fmt.Fprintln(w, "\nCommands (mqadmin's names and flags):")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-22s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-22s %s\n", "help [COMMAND]", "this help, or a command's flags")
	fmt.Fprintf(w, "  %-22s %s\n", "version", "print the version")
	fmt.Fprintln(w, `
Output is a table like mqadmin's, with a #NameServers column when several
peers answer ("3/3", or the peers a row is missing or differs on); -o json
and -o yaml print the same data for scripts.`)
	fmt.Fprintln(w)
	fmt.Fprintln(w, ExitCodesHelp)
}

func printCommandHelp(f Frontend, cmd *command, fs *pflag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n", usageLine(f, cmd), cmd.summary)
	if cmd.notes != "" {
		fmt.Fprintf(w, "\n%s\n", cmd.notes)
	}
	fmt.Fprintf(w, "\nFlags:\n%s", fs.FlagUsages())
	fmt.Fprintln(w)
	fmt.Fprintln(w, ExitCodesHelp)
}
