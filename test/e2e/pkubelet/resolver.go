package pkubelet

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Resolver maps what a container would run from its image to host binaries.
// There are no images here, so a Pod's real template is used unchanged and
// only the paths that exist inside the image are translated.
type Resolver struct {
	// Images maps an image repository (the reference without tag or
	// digest, e.g. "kube-namesrv/kube-namesrv") to its entrypoint on this
	// host; it is used when the container has no command, like an image's
	// ENTRYPOINT.
	Images map[string][]string
	// Commands maps an absolute path inside an image (e.g. "/namesrv") to a
	// host binary; it applies to the first word of a container's command.
	// Commands not listed run as they are (e.g. "/bin/sh").
	Commands map[string]string
}

// argv combines the (already expanded) command and args of c into a host
// command line.
func (r Resolver) argv(c *corev1.Container, command, args []string) ([]string, error) {
	if len(command) == 0 {
		entry, ok := r.Images[ImageRepository(c.Image)]
		if !ok || len(entry) == 0 {
			return nil, fmt.Errorf("container %s has no command and image %q has no entrypoint in the resolver", c.Name, c.Image)
		}
		return append(append([]string(nil), entry...), args...), nil
	}
	out := append(append([]string(nil), command...), args...)
	if host, ok := r.Commands[out[0]]; ok {
		out[0] = host
	}
	return out, nil
}

// ImageRepository strips the tag and digest from an image reference.
func ImageRepository(image string) string {
	if i := strings.IndexByte(image, '@'); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndexByte(image, ':'); i > strings.LastIndexByte(image, '/') {
		image = image[:i]
	}
	return image
}
