package nsadmin

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// peerStatus reads each peer's route summary from its HTTP port: what the
// remoting protocol cannot tell, such as the brokers' DataVersions, the
// start-up route gate and a digest of the whole broker table.
type peerStatus struct {
	httpPort  int
	https     bool
	tokenFile string
	// token is the bearer token read from tokenFile.
	token string
	fs    *pflag.FlagSet
}

// useTarget takes the frontend's HTTP port unless --http-port is given.
func (c *peerStatus) useTarget(t *Target) {
	if t.HTTPPort != 0 && !c.fs.Changed("http-port") {
		c.httpPort = t.HTTPPort
	}
}

// PeerSummary is one peer's summary.
type PeerSummary struct {
	Addr    string              `json:"nameServer"`
	URL     string              `json:"url"`
	Summary *peerstatus.Summary `json:"summary"`
}

// SummaryBrokerRow is one live broker with the DataVersion a peer holds.
type SummaryBrokerRow struct {
	Cluster     string                 `json:"cluster"`
	Addr        string                 `json:"addr"`
	BrokerName  string                 `json:"brokerName"`
	BrokerID    int64                  `json:"brokerId"`
	DataVersion peerstatus.DataVersion `json:"dataVersion"`
	Presence
}

type peerStatusReport struct {
	base
	Summaries []PeerSummary `json:"summaries"`
	// Brokers are the live brokers not held alike (same DataVersion) by
	// every peer that answered.
	Brokers []SummaryBrokerRow `json:"brokers"`
	Agreed  bool               `json:"agreed"`
	now     time.Time
}

func (c *peerStatus) check() error {
	if c.httpPort < 1 || c.httpPort > 65535 {
		return usagef("--http-port %d: want a port number", c.httpPort)
	}
	if c.tokenFile != "" {
		token, err := readToken(c.tokenFile)
		if err != nil {
			return usagef("--http-token-file: %v", err)
		}
		c.token = token
	}
	return nil
}

// readToken reads a bearer token file as the NameServer's
// httpAuthTokenFile is written (a mounted Secret): the first non-blank
// line, surrounding white space ignored.
func readToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(data)) {
		token := strings.TrimSpace(line)
		if token == "" {
			continue
		}
		for i := 0; i < len(token); i++ {
			if token[i] <= ' ' || token[i] >= 0x7f {
				return "", fmt.Errorf("%s: the token has a character that is not visible ASCII at byte %d", path, i)
			}
		}
		return token, nil
	}
	return "", fmt.Errorf("%s holds no token", path)
}

func (c *peerStatus) run(ctx context.Context, ps *Peers) report {
	rep := &peerStatusReport{base: newBase(ps), Summaries: []PeerSummary{}, Brokers: []SummaryBrokerRow{}, now: time.Now()}
	port := strconv.Itoa(c.httpPort)
	scheme := "http://"
	if c.https {
		scheme = "https://"
	}
	answers := each(ctx, ps, func(ctx context.Context, p *peer) (PeerSummary, error) {
		host, _, _ := net.SplitHostPort(p.addr)
		ps := PeerSummary{Addr: p.addr, URL: scheme + net.JoinHostPort(host, port) + peerstatus.SummaryPath}
		s, err := fetchSummary(ctx, p, ps.URL, c.token)
		ps.Summary = s
		return ps, err
	})
	got := collect(&rep.base, answers)
	rows := map[string][]SummaryBrokerRow{}
	for _, addr := range rep.answered() {
		s := got[addr]
		rep.Summaries = append(rep.Summaries, s)
		for _, b := range s.Summary.Brokers {
			rows[addr] = append(rows[addr], SummaryBrokerRow{Cluster: b.Cluster, Addr: b.Addr, BrokerName: b.BrokerName,
				BrokerID: b.BrokerID, DataVersion: b.DataVersion})
		}
	}
	key := func(r SummaryBrokerRow) string { return r.Cluster + "\x00" + r.Addr }
	same := func(a, b SummaryBrokerRow) bool {
		return a.BrokerName == b.BrokerName && a.BrokerID == b.BrokerID && a.DataVersion == b.DataVersion
	}
	for _, m := range mergeRows(rep.answered(), rows, key, same) {
		if !m.Agreed() {
			r := m.Value
			r.Presence = m.Presence
			rep.Brokers = append(rep.Brokers, r)
		}
	}
	rep.Agreed = len(rep.Brokers) == 0
	return rep
}

// fetchSummary GETs one summary, presenting token when there is one, and
// over HTTPS the client certificate of the --tls-* flags; failures are the
// peer's, worded like the remoting ones.
func fetchSummary(ctx context.Context, p *peer, url, token string) (*peerstatus.Summary, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, &PeerError{Addr: p.addr, Kind: Protocol, Msg: err.Error(), Err: err}
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	var tlsCfg *tls.Config
	if p.opts.TLS != nil {
		tlsCfg = p.opts.TLS.Clone()
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true, DialContext: p.opts.dial, TLSClientConfig: tlsCfg}}
	resp, err := client.Do(req)
	if err != nil {
		var ue *neturl.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		e := dialFailed(p.addr, p.opts.Timeout, err)
		e.Msg += " (" + url + ")"
		return nil, e
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, &PeerError{Addr: p.addr, Kind: Unreachable, Msg: "reading " + url + ": " + err.Error(), Err: err}
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, &PeerError{Addr: p.addr, Kind: Refused, Msg: url + " answers 404: this NameServer serves no route summary",
			Hint: "a release older than this tool, or not the NameServer's HTTP port"}
	case resp.StatusCode != http.StatusOK:
		return nil, &PeerError{Addr: p.addr, Kind: Refused, Msg: fmt.Sprintf("%s answers %s", url, resp.Status),
			Hint: httpRefusalHint(resp.StatusCode, token != "", body)}
	}
	var s peerstatus.Summary
	if err := json.Unmarshal(body, &s); err != nil {
		return nil, &PeerError{Addr: p.addr, Kind: Protocol, Msg: fmt.Sprintf("%s is not a route summary: %v", url, err), Err: err}
	}
	return &s, nil
}

// httpRefusalHint says what to try when the HTTP port refuses the
// credential (docs/security.md#http).
func httpRefusalHint(status int, sentToken bool, body []byte) string {
	switch {
	case status == http.StatusUnauthorized && sentToken:
		return "the NameServer does not accept the token of --http-token-file (its httpAuthTokenFile)"
	case status == http.StatusUnauthorized:
		return "the NameServer's HTTP port needs a credential (httpAuthScope=all): pass --http-token-file FILE, or --https with --tls-cert and --tls-key"
	case status == http.StatusForbidden:
		return "the client certificate does not hold the read role (the NameServer's authzReadIdentities)"
	case status == http.StatusBadRequest && strings.Contains(string(body), "HTTPS server"):
		return "the NameServer's HTTP port serves TLS only (httpTLSMode=enforcing): pass --https"
	}
	return ""
}

func short(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	if s == "" {
		return "-"
	}
	return s
}

func gateState(g peerstatus.Gate) string {
	switch {
	case !g.Enabled:
		return "off"
	case g.Open && g.OpenedBy != "":
		return "open (" + g.OpenedBy + ")"
	case g.Open:
		return "open"
	}
	return fmt.Sprintf("CLOSED, %d of %d missing", len(g.Missing), g.Expected)
}

func kvState(kv *peerstatus.KVStatus) string {
	switch {
	case kv == nil:
		return "-"
	case kv.Error != "":
		return "ERROR: " + kv.Error
	case kv.InSync:
		return "in sync"
	}
	return fmt.Sprintf("DRIFT, %d keys", len(kv.Drift))
}

const summaryFormat = "%-40s  %-8s  %-10s  %-24s  %-8s  %-8s  %-12s  %s"

func (r *peerStatusReport) table(w io.Writer) {
	if len(r.Summaries) == 0 {
		return
	}
	line(w, fmt.Sprintf(summaryFormat, "#NameServer", "#Boot", "#Up", "#Gate", "#Brokers", "#Topics", "#Digest", "#KV"))
	for _, s := range r.Summaries {
		up := r.now.Sub(s.Summary.StartTime).Round(time.Second).String()
		if s.Summary.StartTime.IsZero() {
			up = "-"
		}
		line(w, fmt.Sprintf(summaryFormat, s.Addr, short(s.Summary.BootID, 8), up, gateState(s.Summary.Gate),
			strconv.Itoa(s.Summary.Counts.Brokers), strconv.Itoa(s.Summary.Counts.Topics), short(s.Summary.Digest, 12), kvState(s.Summary.KV)))
	}
	if len(r.Brokers) > 0 {
		fmt.Fprintln(w, "\nLive brokers the NameServers disagree on (registration or DataVersion):")
		const f = "%-22s  %-22s  %-22s  %-4s  %-36s  %s"
		line(w, fmt.Sprintf(f, "#Cluster Name", "#Addr", "#Broker Name", "#BID", "#DataVersion", "#NameServers"))
		for _, b := range r.Brokers {
			dv := fmt.Sprintf("%d/%d/%d", b.DataVersion.StateVersion, b.DataVersion.Timestamp, b.DataVersion.Counter)
			line(w, fmt.Sprintf(f, b.Cluster, b.Addr, b.BrokerName, strconv.FormatInt(b.BrokerID, 10), dv, b.Column()))
		}
	}
	summary(w, r.multi, r.answered(), r.Agreed, "the live brokers and their DataVersions")
}
