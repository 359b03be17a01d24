//go:build race

package testflags

// The race detector makes a history about seven times slower; the -race run
// of the package keeps a sample, and `make test-simulation` runs the full
// count without it.
func init() { *Histories = 1000 }
