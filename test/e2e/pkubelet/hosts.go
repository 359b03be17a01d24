package pkubelet

import (
	"fmt"
	"os"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// hostEntry is one line of the hosts file.
type hostEntry struct {
	ip    string
	names []string
}

// podHostNames are the names a Pod with a hostname and a subdomain gets in
// cluster DNS (and in its own /etc/hosts); nil for any other Pod.
func podHostNames(pod *corev1.Pod, clusterDomain string) []string {
	h, sub := pod.Spec.Hostname, pod.Spec.Subdomain
	if h == "" || sub == "" {
		return nil
	}
	svc := h + "." + sub + "." + pod.Namespace + ".svc"
	return []string{svc + "." + clusterDomain, svc, h}
}

// renderHosts produces the hosts file: localhost first (envtest and every Go
// client in the box dial "localhost"), then one line per entry, ordered so
// that the file only changes when the entries do.
func renderHosts(entries []hostEntry) []byte {
	sorted := append([]hostEntry(nil), entries...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].ip != sorted[j].ip {
			return ipLess(sorted[i].ip, sorted[j].ip)
		}
		return strings.Join(sorted[i].names, " ") < strings.Join(sorted[j].names, " ")
	})
	var b strings.Builder
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost\n")
	for _, e := range sorted {
		fmt.Fprintf(&b, "%s\t%s\n", e.ip, strings.Join(e.names, " "))
	}
	return []byte(b.String())
}

// ipLess orders dotted addresses numerically per octet where possible.
func ipLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		if pa[i] == pb[i] {
			continue
		}
		if len(pa[i]) != len(pb[i]) {
			return len(pa[i]) < len(pb[i])
		}
		return pa[i] < pb[i]
	}
	return len(pa) < len(pb)
}

// writeInPlace replaces the content of path without replacing the file: the
// hosts file is bind-mounted over /etc/hosts, and a rename would detach it.
// The new content is written over the old one before the tail is cut, so a
// concurrent reader never sees an empty file.
func writeInPlace(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open hosts file: %w", err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		f.Close()
		return fmt.Errorf("write hosts file: %w", err)
	}
	if err := f.Truncate(int64(len(data))); err != nil {
		f.Close()
		return fmt.Errorf("truncate hosts file: %w", err)
	}
	return f.Close()
}
