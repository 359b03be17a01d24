package pkubelet

import "strings"

// token is a piece of a string with $(VAR) references: literal text, or a
// reference by name.
type token struct {
	text  string
	isRef bool
}

// tokenize splits s the way the kubelet reads references: "$(NAME)" is a
// reference, "$$" is an escaped "$", and a "$(" without ")" or a "$" before
// any other byte is literal.
func tokenize(s string) []token {
	var out []token
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, token{text: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			lit.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			lit.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				lit.WriteString("$(")
				i++
				continue
			}
			flush()
			out = append(out, token{text: s[i+2 : i+2+end], isRef: true})
			i += 2 + end
		default:
			lit.WriteByte('$')
		}
	}
	flush()
	return out
}

// expand replaces $(NAME) references the way the kubelet does for env values,
// command and args: a defined name is substituted, an undefined one is left
// as written.
func expand(s string, lookup func(string) (string, bool)) string {
	return expandRewrite(s, lookup, nil)
}

// expandRewrite is expand that also rewrites mount paths, but only in the
// literal text of s: substituted values may already be host paths (another
// variable, PKUBELET_MOUNT_*), and rewriting them again could corrupt them
// when a mount path is a prefix of the host's directories (an emptyDir at
// /tmp, say). Literal text next to a reference is treated as the middle of a
// path: "$(DIR)/data" is not the mount at /data.
func expandRewrite(s string, lookup func(string) (string, bool), mounts mountTable) string {
	if !strings.Contains(s, "$") {
		return mounts.rewriteSegment(s, true, true)
	}
	toks := tokenize(s)
	var b strings.Builder
	for i, t := range toks {
		if t.isRef {
			if v, ok := lookup(t.text); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + t.text + ")")
			}
			continue
		}
		afterRef := i > 0 && toks[i-1].isRef
		beforeRef := i+1 < len(toks) && toks[i+1].isRef
		b.WriteString(mounts.rewriteSegment(t.text, !afterRef, !beforeRef))
	}
	return b.String()
}
