//go:build !linux

package metrics

// processStats writes nothing where there is no /proc: the NameServer's
// image runs on Linux, the process series are for it.
type processStats struct{}

func newProcessStats() *processStats { return &processStats{} }

func (*processStats) write(*encoder) {}
