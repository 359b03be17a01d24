package nsadmin

import (
	"context"

	"github.com/spf13/pflag"
)

// Direct is nsadmin's frontend: the peers are given with -n, as to
// mqadmin, or in NAMESRV_ADDR.
type Direct struct {
	getenv func(string) string
	addrs  string
}

// NewDirect returns the frontend; getenv reads NAMESRV_ADDR.
func NewDirect(getenv func(string) string) *Direct { return &Direct{getenv: getenv} }

// Name implements Frontend.
func (*Direct) Name() string { return "nsadmin" }

// Args implements Frontend.
func (*Direct) Args() string { return `-n "host:port;host:port"` }

// Help implements Frontend.
func (*Direct) Help() string {
	return `The peers are given with -n "a:9876;b:9876;c:9876" as to mqadmin, or in
$NAMESRV_ADDR. Give every peer: read commands compare them, write commands
go to each.`
}

// Bind implements Frontend.
func (d *Direct) Bind(fs *pflag.FlagSet) {
	fs.StringVarP(&d.addrs, "namesrvAddr", "n", "", "NameServer peers, ';'-separated (default $NAMESRV_ADDR)")
}

// Resolve implements Frontend.
func (d *Direct) Resolve(_ context.Context, args []string) (*Target, error) {
	if len(args) > 0 {
		return nil, usagef("unexpected arguments %q", args)
	}
	list := d.addrs
	if list == "" && d.getenv != nil {
		list = d.getenv("NAMESRV_ADDR")
	}
	if list == "" {
		return nil, usagef(`no NameServer: give -n "host:9876;host2:9876" or set NAMESRV_ADDR`)
	}
	addrs, err := ParseAddrs(list)
	if err != nil {
		return nil, &UsageError{Msg: err.Error()}
	}
	return &Target{Addrs: addrs}, nil
}
