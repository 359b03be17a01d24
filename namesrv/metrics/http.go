package metrics

import (
	"io"
	"net/http"
	"slices"

	"github.com/munnerz/goautoneg"
)

// textFormat is the content type of the Prometheus text format, version
// 0.0.4: the one format served. Scrapers that would rather have protobuf
// or OpenMetrics accept it too (Prometheus always does).
const textFormat = "text/plain; version=0.0.4; charset=utf-8"

// escapingSchemes are the name-escaping schemes a scraper may ask for
// (the escaping parameter of its Accept header); the answer names the
// one asked for, underscores by default. Every name and label here is a
// legacy Prometheus name, which each scheme leaves as it is.
var escapingSchemes = []string{"allow-utf-8", "underscores", "dots", "values"}

// contentType negotiates the answer's Content-Type as the Prometheus Go
// client does when it serves the text format: the escaping scheme of the
// Accept header's clauses, in order of preference, down to the first
// clause the text format satisfies.
func contentType(accept string) string {
	escaping := "underscores"
	for _, ac := range goautoneg.ParseAccept(accept) {
		if e := ac.Params["escaping"]; e != "" && slices.Contains(escapingSchemes, e) {
			escaping = e
		}
		if acceptsText(ac) {
			break
		}
	}
	return textFormat + "; escaping=" + escaping
}

// acceptsText tells whether an Accept clause asks for the text format,
// version 0.0.4 (a text/plain clause without a version means it).
func acceptsText(ac goautoneg.Accept) bool {
	if ac.Type != "*" && ac.Type != "text" || ac.SubType != "*" && ac.SubType != "plain" {
		return false
	}
	version := ac.Params["version"]
	if version == "" && ac.Type == "text" && ac.SubType == "plain" {
		version = "0.0.4"
	}
	return version == "0.0.4"
}

// ServeHTTP answers a scrape: every family, or with name[] query
// parameters only the families named, written as it is read through a
// page-sized buffer. The answer is not compressed, whatever the scraper's
// Accept-Encoding offers: a deflate compressor's tables (300 KB to 800 KB)
// would be the largest thing this process allocates while idle, and would
// stay resident, for a saving of about 70 KB on the wire per scrape.
//
// Scrapes take turns, and keep what they need from one to the next (the
// buffer, the last Accept header's answer, the runtime's and /proc's
// readers): a scrape allocates next to nothing, which matters because an
// idle process keeps every page its heap touched until the heap first
// reaches the collector's goal (4 MB), and every scrape would add to it.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var only map[string]bool
	if r.URL != nil && r.URL.RawQuery != "" {
		if names := r.URL.Query()["name[]"]; len(names) > 0 {
			only = make(map[string]bool, len(names))
			for _, n := range names {
				only[n] = true
			}
		}
	}
	sc := &m.scrape
	sc.Lock()
	defer sc.Unlock()
	if accept := r.Header.Get("Accept"); accept != sc.accept || sc.contentType == "" {
		sc.accept, sc.contentType = accept, contentType(accept)
	}
	h := w.Header()
	h.Set("Content-Type", sc.contentType)
	h.Add("Vary", "Accept")
	m.write(w, only)
}

// write writes the exposition, with the scrape lock held: families in name
// order, as Prometheus' registry sorts them (go_*, then process_*, then
// rocketmq_namesrv_*). Errors are those of the scraper's connection, which
// is gone: there is nobody to tell.
func (m *Metrics) write(w io.Writer, only map[string]bool) {
	sc := &m.scrape
	sc.routes = m.routes()
	e := &sc.enc
	e.reset(w, only)
	sc.runtime.write(e)
	sc.process.write(e)
	for _, f := range m.families {
		f.write(e)
	}
	e.flush()
	e.reset(nil, nil) // the response is done with
}
