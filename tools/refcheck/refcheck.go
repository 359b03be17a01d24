// Package refcheck finds references to files that are not in the
// repository: Markdown links, and mentions in documentation, scripts, build
// files and the comments of Go and YAML files, of Markdown files (docs/protocol.md, with or without an #anchor), of test data
// in testdata directories and of shared/ directories outside the
// repository, plus section-sign citations of documents nobody can open. The repository must
// stand alone: a reader following a reference must find what it names.
//
// It is run by a test of this package, so the tools module's tests (`make
// check-refs`, and `make test`) fail on a dangling reference.
package refcheck

import (
	"bufio"
	"bytes"
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Problem is one reference that does not resolve.
type Problem struct {
	// File is relative to the root, with forward slashes; Line counts from 1.
	File string
	Line int
	Ref  string
	Why  string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s:%d: %q: %s", p.File, p.Line, p.Ref, p.Why)
}

// Options tune a check.
type Options struct {
	// Skip lists paths (relative to the root, forward slashes) whose files
	// are not scanned, such as this package's fixtures of bad references.
	// They can still be the target of a reference.
	Skip []string
}

// skipDirs are never scanned: version control, built tools and
// dependencies.
var skipDirs = []string{".git", "bin", "node_modules"}

// scanned reports whether a file is text this check reads: source,
// documentation, scripts, build files and their comments.
func scanned(path string) bool {
	switch filepath.Ext(path) {
	case ".go", ".md", ".sh", ".yaml", ".yml", ".tpl", ".txt", ".hex", ".properties":
		return true
	}
	switch filepath.Base(path) {
	case "Makefile", "Dockerfile", "PROJECT":
		return true
	}
	return false
}

var (
	// mdLink is an inline Markdown link or image: [text](target).
	mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// codeSpan is inline code, where brackets and parentheses are text (a
	// regular expression, say), never a link.
	codeSpan = regexp.MustCompile("`[^`]*`")
	// fileRef is a path-like mention of a Markdown file, of test data or
	// of a shared/ directory. The character before it must not belong to a
	// path, so a URL's tail is not taken for one.
	fileRef = regexp.MustCompile(`(?:^|[^\w./:-])((?:[\w.-]+/)*(?:[\w.-]+\.md\b(?:#[\w-]+)?|testdata/[\w.-][\w./-]*|shared/[\w.-][\w./-]*))`)
	// url spans are removed before looking for file references.
	url = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://\S+`)
	// domain is a first path segment that is a host name, as in
	// github.com/owner/repo/README.md.
	domain = regexp.MustCompile(`^[a-z0-9-]+(\.[a-z0-9-]+)*\.(com|io|org|net|dev|sh|cn)$`)
	// anchorTag is an explicit HTML anchor in Markdown.
	anchorTag = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	heading   = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// sectionSign is written as an escape so that this file does not cite.
const sectionSign = "\u00a7"

// Check scans every file under root and returns the references that do not
// resolve, sorted by file and line.
func Check(root string, opts Options) ([]Problem, error) {
	c := &checker{root: root, anchors: map[string]map[string]bool{}}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := c.rel(path)
		if slices.Contains(opts.Skip, rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if path != root && slices.Contains(skipDirs, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !scanned(path) && !isScript(path) {
			return nil
		}
		return c.file(path)
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(c.problems, func(a, b Problem) int {
		if a.File != b.File {
			return strings.Compare(a.File, b.File)
		}
		return a.Line - b.Line
	})
	return c.problems, nil
}

// isScript reports whether a file without a known extension starts with
// "#!" (.ci/run and the like).
func isScript(path string) bool {
	if filepath.Ext(path) != "" {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 2)
	n, _ := f.Read(head)
	return n == 2 && string(head) == "#!"
}

type checker struct {
	root     string
	problems []Problem
	// anchors caches the anchors of Markdown files by absolute path.
	anchors map[string]map[string]bool
}

func (c *checker) rel(path string) string {
	r, err := filepath.Rel(c.root, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(r)
}

func (c *checker) report(file string, line int, ref, why string) {
	c.problems = append(c.problems, Problem{File: c.rel(file), Line: line, Ref: ref, Why: why})
}

func (c *checker) file(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	switch filepath.Ext(path) {
	case ".go":
		data = goComments(data)
	case ".yaml", ".yml":
		data = yamlComments(data)
	}
	isMD := filepath.Ext(path) == ".md"
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	inFence := false
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.Contains(line, sectionSign) {
			c.report(path, n, sectionSign, "a section sign cites a document by number; cite a heading of docs/protocol.md by its #anchor, or a Java name")
		}
		if isMD && strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
		}
		mentions := line
		if isMD && !inFence {
			for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, " "), -1) {
				c.link(path, n, m[1])
			}
			mentions = mdLink.ReplaceAllString(line, " ")
		}
		mentions = url.ReplaceAllString(mentions, " ")
		for _, m := range fileRef.FindAllStringSubmatch(mentions, -1) {
			c.mention(path, n, m[1])
		}
	}
	return sc.Err()
}

// link checks the target of a Markdown link, relative to the linking file.
func (c *checker) link(from string, line int, target string) {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return
	}
	file, anchor, _ := strings.Cut(target, "#")
	path := from
	if file != "" {
		path = filepath.Join(filepath.Dir(from), filepath.FromSlash(file))
		if _, err := os.Stat(path); err != nil {
			c.report(from, line, target, "the link's target does not exist")
			return
		}
	}
	c.checkAnchor(from, line, target, path, anchor)
}

// mention checks a path named in text: it must exist relative to the
// mentioning file's directory or to the root.
func (c *checker) mention(from string, line int, ref string) {
	ref = strings.TrimRight(ref, ".")
	file, anchor, _ := strings.Cut(ref, "#")
	first, _, nested := strings.Cut(file, "/")
	if nested && domain.MatchString(first) {
		return
	}
	for _, base := range []string{filepath.Dir(from), c.root} {
		path := filepath.Join(base, filepath.FromSlash(file))
		if _, err := os.Stat(path); err == nil {
			c.checkAnchor(from, line, ref, path, anchor)
			return
		}
	}
	why := "no such file in the repository"
	if strings.HasPrefix(file, "shared/") || strings.Contains(file, "/shared/") {
		why = "shared/ is outside the repository; copy what is needed in, or cite a Java name"
	}
	c.report(from, line, ref, why)
}

func (c *checker) checkAnchor(from string, line int, ref, path, anchor string) {
	if anchor == "" || filepath.Ext(path) != ".md" {
		return
	}
	anchors, err := c.anchorsOf(path)
	if err != nil {
		c.report(from, line, ref, err.Error())
		return
	}
	if !anchors[anchor] {
		c.report(from, line, ref, "no heading or <a id> with this anchor in "+c.rel(path))
	}
}

// anchorsOf lists the anchors of a Markdown file: the GitHub slug of each
// heading, and explicit <a id="..."> tags.
func (c *checker) anchorsOf(path string) (map[string]bool, error) {
	if a, ok := c.anchors[path]; ok {
		return a, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	a := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
		}
		for _, m := range anchorTag.FindAllStringSubmatch(line, -1) {
			a[m[1]] = true
		}
		if inFence {
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			slug := Slug(anchorTag.ReplaceAllString(m[1], ""))
			if k := seen[slug]; k > 0 {
				a[fmt.Sprintf("%s-%d", slug, k)] = true
			} else {
				a[slug] = true
			}
			seen[slug]++
		}
	}
	c.anchors[path] = a
	return a, nil
}

// Slug is the anchor GitHub gives a heading: lower case, spaces as hyphens,
// punctuation other than hyphens and underscores dropped.
func Slug(text string) string {
	text = strings.NewReplacer("`", "", "*", "", "</a>", "").Replace(strings.TrimSpace(text))
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// goComments keeps the comments of Go source, on their lines, and blanks
// the rest: a comment is where a citation goes stale unnoticed, while a
// path in a string literal is checked by running the code (and may be a
// bare name that filepath.Join completes).
func goComments(src []byte) []byte {
	out := bytes.Map(func(r rune) rune {
		if r == '\n' {
			return r
		}
		return ' '
	}, src)
	var s scanner.Scanner
	fset := token.NewFileSet()
	s.Init(fset.AddFile("", fset.Base(), len(src)), src, nil, scanner.ScanComments)
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.COMMENT {
			off := fset.Position(pos).Offset
			copy(out[off:], lit)
		}
	}
	return out
}

// yamlComments keeps the comments of YAML, from a '#' at the start of a
// line or after a blank, and blanks the values.
func yamlComments(src []byte) []byte {
	lines := bytes.Split(src, []byte("\n"))
	for i, l := range lines {
		at := -1
		for j, ch := range l {
			if ch == '#' && (j == 0 || l[j-1] == ' ' || l[j-1] == '\t') {
				at = j
				break
			}
		}
		if at < 0 {
			lines[i] = nil
		} else {
			lines[i] = l[at:]
		}
	}
	return bytes.Join(lines, []byte("\n"))
}
