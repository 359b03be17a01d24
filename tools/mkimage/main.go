// Command mkimage packs a container image without a container engine or a
// registry: one layer of local files on scratch and a config, written as a
// docker-archive tarball that `ctr images import` loads. The end-to-end suite
// packs the product image with it, from the binaries hack/build-binaries.sh
// built, as the Dockerfile's final stage describes (-dockerfile), and the
// pause image of its node (-file, -entrypoint).
//
// Every tarball is read back and compared with what was asked for before
// mkimage succeeds; with -dockerfile, what was asked for is the final stage,
// so the packed config (user, entrypoint, files) is checked against the
// Dockerfile itself.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// listFlag is a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	var tags, roots, files, entrypoint listFlag
	out := fs.String("o", "", "the docker-archive tarball to write")
	fs.Var(&tags, "tag", "a tag of the image (repeatable; at least one)")
	dockerfile := fs.String("dockerfile", "", "pack this Dockerfile's final stage")
	fs.Var(&roots, "root", "with -dockerfile, PREFIX=DIR: the build stage's files under PREFIX are DIR's (repeatable)")
	fs.Var(&files, "file", "without -dockerfile, /PATH=LOCAL: a file of the image (repeatable)")
	fs.Var(&entrypoint, "entrypoint", "without -dockerfile, the entrypoint's argv (repeatable, in order)")
	user := fs.String("user", "", "without -dockerfile, the image's user")
	arch := fs.String("arch", runtime.GOARCH, "the image's architecture, that of the files")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || len(tags) == 0 || fs.NArg() > 0 {
		return fmt.Errorf("usage: mkimage -o OUT.tar -tag REPO:TAG... (-dockerfile FILE -root PREFIX=DIR... | -file /PATH=LOCAL... -entrypoint ARG... [-user U])")
	}
	s, err := specFromFlags(*dockerfile, roots, files, entrypoint, *user, *arch)
	if err != nil {
		return err
	}
	img, err := build(s)
	if err != nil {
		return err
	}
	if err := write(*out, tags, img); err != nil {
		return err
	}
	return verify(*out, tags, s)
}

func specFromFlags(dockerfile string, roots, files, entrypoint []string, user, arch string) (spec, error) {
	if dockerfile == "" {
		if len(roots) > 0 {
			return spec{}, fmt.Errorf("-root needs -dockerfile")
		}
		if len(files) == 0 || len(entrypoint) == 0 {
			return spec{}, fmt.Errorf("without -dockerfile, give -file and -entrypoint")
		}
		s := spec{user: user, entrypoint: entrypoint, arch: arch}
		for _, f := range files {
			dst, src, ok := strings.Cut(f, "=")
			if !ok || !strings.HasPrefix(dst, "/") || src == "" {
				return spec{}, fmt.Errorf("-file %q: want /PATH=LOCAL", f)
			}
			s.files = append(s.files, file{dst: dst, src: src})
		}
		return s, nil
	}
	if len(files) > 0 || len(entrypoint) > 0 || user != "" {
		return spec{}, fmt.Errorf("-dockerfile takes the files, entrypoint and user from the Dockerfile")
	}
	text, err := os.ReadFile(dockerfile)
	if err != nil {
		return spec{}, err
	}
	st, err := finalStage(string(text))
	if err != nil {
		return spec{}, fmt.Errorf("%s: %w", dockerfile, err)
	}
	rootMap := map[string]string{}
	for _, r := range roots {
		prefix, dir, ok := strings.Cut(r, "=")
		if !ok || !strings.HasPrefix(prefix, "/") || dir == "" {
			return spec{}, fmt.Errorf("-root %q: want PREFIX=DIR", r)
		}
		rootMap[prefix] = dir
	}
	return specOf(st, rootMap, arch)
}
