package pkubelet

import (
	"path/filepath"
	"sort"
	"strings"
)

// mount is one volumeMount of a container: where the container expects the
// volume and where it really is on this host.
type mount struct {
	path     string
	hostPath string
}

// mountTable rewrites in-container paths to host paths. Processes share the
// host's file system, so a "--data-dir=/data" argument must become the host
// directory of the volume mounted at /data.
type mountTable []mount

// newMountTable sorts mounts longest path first, so that a mount at
// /etc/app/certs wins over one at /etc/app for paths below both. The root
// mount is dropped: rewriting every absolute path would break executables.
func newMountTable(ms []mount) mountTable {
	t := make(mountTable, 0, len(ms))
	for _, m := range ms {
		p := filepath.Clean(m.path)
		if p == "/" || !filepath.IsAbs(p) {
			continue
		}
		t = append(t, mount{path: p, hostPath: m.hostPath})
	}
	sort.SliceStable(t, func(i, j int) bool { return len(t[i].path) > len(t[j].path) })
	return t
}

// rewrite replaces every mount path in s that stands as a whole path or a
// path prefix: "/data", "/data/x" and "--dir=/data" are rewritten, but not
// "/database" or "/srv/data". It scans s once, so host paths it inserts are
// never rewritten again.
func (t mountTable) rewrite(s string) string { return t.rewriteSegment(s, true, true) }

// rewriteSegment is rewrite for a piece of a longer string: startIsBoundary
// and endIsBoundary tell whether the text before and after the piece may end
// a path.
func (t mountTable) rewriteSegment(s string, startIsBoundary, endIsBoundary bool) string {
	if len(t) == 0 || !strings.Contains(s, "/") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		boundary := startIsBoundary
		if i > 0 {
			boundary = !isPathByte(s[i-1])
		}
		if boundary {
			if m, ok := t.match(s[i:], endIsBoundary); ok {
				b.WriteString(m.hostPath)
				i += len(m.path)
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

func (t mountTable) match(s string, endIsBoundary bool) (mount, bool) {
	for _, m := range t {
		if !strings.HasPrefix(s, m.path) {
			continue
		}
		rest := s[len(m.path):]
		if (rest == "" && endIsBoundary) || (rest != "" && (rest[0] == '/' || !isPathByte(rest[0]))) {
			return m, true
		}
	}
	return mount{}, false
}

// isPathByte reports whether c can be part of a path component or separator,
// i.e. whether a mount path touching c is only part of a longer path.
func isPathByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return c == '/' || c == '.' || c == '_' || c == '-' || c == '~' || c == '+'
}

// mountEnvName is the variable that exports a mount's host path, so that a
// test or a wrapper script can find it: /etc/namesrv -> PKUBELET_MOUNT_ETC_NAMESRV.
func mountEnvName(mountPath string) string {
	var b strings.Builder
	b.WriteString("PKUBELET_MOUNT_")
	last := byte('_')
	for _, c := range []byte(strings.Trim(filepath.Clean(mountPath), "/")) {
		switch {
		case c >= 'a' && c <= 'z':
			c -= 'a' - 'A'
		case c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		default:
			c = '_'
		}
		if c == '_' && last == '_' {
			continue
		}
		b.WriteByte(c)
		last = c
	}
	return strings.TrimSuffix(b.String(), "_")
}
