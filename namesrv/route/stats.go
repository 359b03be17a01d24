package route

import "sync/atomic"

// Stats are the table's counters and sizes, read by the metrics exporter.
type Stats struct {
	// LiveBrokers counts live broker addresses.
	LiveBrokers int64
	Clusters    int64
	Topics      int64
	// Registrations counts REGISTER_BROKER requests applied.
	Registrations int64
	// UnchangedRegistrations counts the registrations among them that
	// repeated the address's previous one byte for byte and were applied
	// without decoding their body (Reregister).
	UnchangedRegistrations int64
	// ViewsBuilt counts topic views (queue data, route, encoded bodies)
	// built: the work a registration does per topic it changes.
	ViewsBuilt int64
	// Evictions counts brokers removed from the live table, by reason.
	Evictions map[EvictReason]int64
}

type counters struct {
	brokers, clusters, topics                  atomic.Int64
	registrations, unchanged, viewsBuilt       atomic.Int64
	evictUnregister, evictClosed, evictExpired atomic.Int64
}

func (c *counters) evictions(why EvictReason) *atomic.Int64 {
	switch why {
	case EvictClosed:
		return &c.evictClosed
	case EvictExpired:
		return &c.evictExpired
	}
	return &c.evictUnregister
}

// Stats returns the current counters without taking the writers' lock.
func (t *Table) Stats() Stats {
	c := &t.stats
	return Stats{
		LiveBrokers:            c.brokers.Load(),
		Clusters:               c.clusters.Load(),
		Topics:                 c.topics.Load(),
		Registrations:          c.registrations.Load(),
		UnchangedRegistrations: c.unchanged.Load(),
		ViewsBuilt:             c.viewsBuilt.Load(),
		Evictions: map[EvictReason]int64{
			EvictUnregister: c.evictUnregister.Load(),
			EvictClosed:     c.evictClosed.Load(),
			EvictExpired:    c.evictExpired.Load(),
		},
	}
}
