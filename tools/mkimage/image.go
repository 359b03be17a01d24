package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// defaultPath is the PATH a Dockerfile build gives an image whose stages set
// none, so that a packed image's config equals a built one's.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// epoch is every file's and the image's time: the same inputs pack to the
// same bytes.
var epoch = time.Unix(0, 0).UTC()

// spec is an image to pack: one layer of files and a config.
type spec struct {
	files      []file
	user       string
	entrypoint []string
	arch       string
}

// file is a file of the image: dst its absolute path there, src the local
// file it is read from.
type file struct {
	dst, src string
}

// specOf is the final stage of a Dockerfile with its build stage's paths
// mapped to local directories: roots maps a path prefix of the build stage
// (like /out) to the directory that holds what the build would put there.
func specOf(s *stage, roots map[string]string, arch string) (spec, error) {
	out := spec{user: s.user, entrypoint: s.entrypoint, arch: arch}
	for _, c := range s.copies {
		src, ok := "", false
		for prefix, dir := range roots {
			if rest, found := strings.CutPrefix(c.src, strings.TrimSuffix(prefix, "/")+"/"); found {
				src, ok = path.Join(dir, rest), true
				break
			}
		}
		if !ok {
			return spec{}, fmt.Errorf("COPY source %s is under no -root", c.src)
		}
		out.files = append(out.files, file{dst: c.dst, src: src})
	}
	return out, nil
}

// layerTar is the uncompressed layer: every file at its path, mode 0755,
// owned by root, as a Dockerfile COPY of executables lays them down.
func layerTar(files []file) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		data, err := os.ReadFile(f.src)
		if err != nil {
			return nil, fmt.Errorf("reading %s for %s: %w", f.src, f.dst, err)
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.dst, "/"), Mode: 0o755,
			Size: int64(len(data)), ModTime: epoch, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", f.dst, err)
		}
		if _, err := tw.Write(data); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", f.dst, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("closing the layer: %w", err)
	}
	return buf.Bytes(), nil
}

// build makes the image of a spec: scratch plus one layer.
func build(s spec) (v1.Image, error) {
	layer, err := layerTar(s.files)
	if err != nil {
		return nil, err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layer)), nil })
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return nil, fmt.Errorf("appending the layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", s.arch
	cf.Created = v1.Time{Time: epoch}
	cf.Config.User = s.user
	cf.Config.Entrypoint = s.entrypoint
	cf.Config.Env = []string{defaultPath}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("setting the config: %w", err)
	}
	return img, nil
}

// write packs the image under every tag into one docker-archive tarball,
// the format `ctr images import` reads.
func write(out string, tags []string, img v1.Image) error {
	refs := map[name.Reference]v1.Image{}
	for _, t := range tags {
		ref, err := name.NewTag(t)
		if err != nil {
			return fmt.Errorf("tag %q: %w", t, err)
		}
		refs[ref] = img
	}
	if err := tarball.MultiRefWriteToFile(out, refs); err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	return nil
}

// verify reads the tarball back under every tag and compares it with the
// spec: the config's user, entrypoint, OS and architecture, and the layer's
// files with their sizes, modes and owners. It is the check that what
// `ctr images import` gets is the image the Dockerfile describes.
func verify(out string, tags []string, s spec) error {
	for _, t := range tags {
		ref, err := name.NewTag(t)
		if err != nil {
			return fmt.Errorf("tag %q: %w", t, err)
		}
		img, err := tarball.ImageFromPath(out, &ref)
		if err != nil {
			return fmt.Errorf("reading %s back as %s: %w", out, t, err)
		}
		if err := compare(img, s); err != nil {
			return fmt.Errorf("%s as %s: %w", out, t, err)
		}
	}
	return nil
}

func compare(img v1.Image, s spec) error {
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	var errs []error
	if cf.Config.User != s.user {
		errs = append(errs, fmt.Errorf("user %q, want %q", cf.Config.User, s.user))
	}
	if !slices.Equal(cf.Config.Entrypoint, s.entrypoint) {
		errs = append(errs, fmt.Errorf("entrypoint %q, want %q", cf.Config.Entrypoint, s.entrypoint))
	}
	if len(cf.Config.Cmd) > 0 {
		errs = append(errs, fmt.Errorf("cmd %q, want none", cf.Config.Cmd))
	}
	if cf.OS != "linux" || cf.Architecture != s.arch {
		errs = append(errs, fmt.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, s.arch))
	}
	layers, err := img.Layers()
	if err != nil {
		return fmt.Errorf("layers: %w", err)
	}
	if len(layers) != 1 {
		return errors.Join(append(errs, fmt.Errorf("%d layers, want 1", len(layers)))...)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	defer rc.Close()
	want := map[string]int64{}
	for _, f := range s.files {
		fi, err := os.Stat(f.src)
		if err != nil {
			return fmt.Errorf("source of %s: %w", f.dst, err)
		}
		want[f.dst] = fi.Size()
	}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("layer: %w", err)
		}
		p := "/" + strings.TrimPrefix(h.Name, "/")
		size, ok := want[p]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("unexpected file %s in the layer", p))
		case h.Typeflag != tar.TypeReg || h.Size != size || h.Mode&0o777 != 0o755 || h.Uid != 0 || h.Gid != 0:
			errs = append(errs, fmt.Errorf("%s: type %c, %d bytes, mode %o, owner %d:%d; want a %d-byte file, 0755, 0:0",
				p, h.Typeflag, h.Size, h.Mode, h.Uid, h.Gid, size))
		}
		delete(want, p)
	}
	for p := range want {
		errs = append(errs, fmt.Errorf("%s missing from the layer", p))
	}
	return errors.Join(errs...)
}
