package route

import "runtime"

// workSlots bounds the goroutines doing registration work at once (a
// registration's checksum and decode, and the write that applies a batch
// of them) to one fewer than GOMAXPROCS, and at least one.
//
// A restart storm brings a thousand brokers' registrations within a
// second, each a few milliseconds of CPU. Run as they come, they kept
// every P busy, and a P that always has a goroutine to run does not poll
// the network: route queries that had arrived waited for the scheduler's
// background poll, every 10 ms, which set their p99. With a P left, it
// polls as soon as it is idle. The registrations keep one P (and the
// batching of their writes, which queue behind the writers' lock as
// before); the route queries, which take no lock, get the rest.
type workSlots chan struct{}

func newWorkSlots() workSlots {
	return make(workSlots, max(1, runtime.GOMAXPROCS(0)-1))
}

// EnterWork waits for a slot for registration work: the processor holds
// one while it checks and decodes a registration body, and the writer
// applying registrations while it applies them. Whoever holds one must
// not call the table (Register, Reregister or any other) until it has
// given it back.
func (t *Table) EnterWork() { t.work <- struct{}{} }

// LeaveWork gives the slot back.
func (t *Table) LeaveWork() { <-t.work }
