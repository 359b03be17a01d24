// Package version holds the build version shared by the namesrv and manager
// binaries; the Makefile and Dockerfile stamp it with -ldflags.
package version

// Version is this build's release tag. The operator uses it as the tag of the
// default NameServer image, so a manager always deploys its own release.
var Version = "v0.1.0"

// Image is the repository of this project's container image (no registry
// host: users pull from their own mirror by overriding spec.image).
const Image = "kube-namesrv/kube-namesrv"

// DefaultImage is the image reference the operator deploys by default.
func DefaultImage() string { return Image + ":" + Version }
