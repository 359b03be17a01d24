// Package testflags defines the flags of TestSimulation (package
// controllers) in every test binary under controllers/, so that one command
// line replays a failing history however it names the packages:
//
//	go test ./controllers/... -run TestSimulation -seed N
//
// go test hands every flag it does not know to every package's test
// binary, and a binary that does not define a flag fails. Only tests import
// this package.
package testflags

import "flag"

var (
	// Seed replays the one history of this seed, with its trace.
	Seed = flag.Uint64("seed", 0, "TestSimulation: replay the one history of this seed, with its trace")
	// Histories is how many random histories TestSimulation runs (1,000
	// in a -race build, see race.go).
	Histories = flag.Int("histories", 10000, "TestSimulation: how many random histories to run")
)
