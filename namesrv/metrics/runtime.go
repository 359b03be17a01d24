package metrics

import (
	"runtime"
	"runtime/debug"
	rm "runtime/metrics"
	"slices"
	"time"
)

// The Go runtime's series, under the names, HELP texts and types the
// Prometheus Go client's default Go collector gives them (client_golang
// 1.2x with Go 1.2x): dashboards and runbooks built for any Go service
// read them. Values come from runtime/metrics, as that collector's do.

// Names in runtime/metrics that the go_memstats_* series derive from.
const (
	rmTinyAllocs        = "/gc/heap/tiny/allocs:objects"
	rmAllocsObjects     = "/gc/heap/allocs:objects"
	rmFreesObjects      = "/gc/heap/frees:objects"
	rmAllocsBytes       = "/gc/heap/allocs:bytes"
	rmHeapObjects       = "/gc/heap/objects:objects"
	rmHeapGoal          = "/gc/heap/goal:bytes"
	rmTotal             = "/memory/classes/total:bytes"
	rmHeapObjectsBytes  = "/memory/classes/heap/objects:bytes"
	rmHeapUnused        = "/memory/classes/heap/unused:bytes"
	rmHeapReleased      = "/memory/classes/heap/released:bytes"
	rmHeapFree          = "/memory/classes/heap/free:bytes"
	rmHeapStacks        = "/memory/classes/heap/stacks:bytes"
	rmOSStacks          = "/memory/classes/os-stacks:bytes"
	rmMSpanInuse        = "/memory/classes/metadata/mspan/inuse:bytes"
	rmMSpanFree         = "/memory/classes/metadata/mspan/free:bytes"
	rmMCacheInuse       = "/memory/classes/metadata/mcache/inuse:bytes"
	rmMCacheFree        = "/memory/classes/metadata/mcache/free:bytes"
	rmProfilingBuckets  = "/memory/classes/profiling/buckets:bytes"
	rmMetadataOther     = "/memory/classes/metadata/other:bytes"
	rmOther             = "/memory/classes/other:bytes"
	rmGOGC              = "/gc/gogc:percent"
	rmGOMEMLIMIT        = "/gc/gomemlimit:bytes"
	rmGOMAXPROCS        = "/sched/gomaxprocs:threads"
	goGCDurationSeconds = "go_gc_duration_seconds"
	goInfo              = "go_info"
)

// runtimeStats reads the runtime at scrape time, for one scrape at a time.
type runtimeStats struct {
	samples []rm.Sample
	index   map[string]int
	// families are the go_* families, in name order.
	families []runtimeFamily
	// gc is kept between scrapes for its buffers.
	gc debug.GCStats
	// goInfo is go_info's label pair.
	goInfo string
}

// runtimeFamily is one go_* family of one sample, or the GC summary.
type runtimeFamily struct {
	name, help, typ string
	// rm, when set, is the runtime/metrics value the family exports under
	// that metric's own description, and only if this Go has it.
	rm    string
	value func(*runtimeRead) float64
}

// runtimeRead is one scrape's reading of the runtime.
type runtimeRead struct {
	s  *runtimeStats
	gc *debug.GCStats
}

// u is a runtime/metrics value, 0 when this Go has no such metric.
func (r *runtimeRead) u(name string) float64 {
	i, ok := r.s.index[name]
	if !ok {
		return 0
	}
	v := r.s.samples[i].Value
	if v.Kind() == rm.KindFloat64 {
		return v.Float64()
	}
	return float64(v.Uint64())
}

func (r *runtimeRead) heapInuse() float64 { return r.u(rmHeapObjectsBytes) + r.u(rmHeapUnused) }
func (r *runtimeRead) heapIdle() float64  { return r.u(rmHeapReleased) + r.u(rmHeapFree) }

// runtimeFamilies are the go_* families, in name order, which is the
// order they are written in.
var runtimeFamilies = []runtimeFamily{
	{name: goGCDurationSeconds, typ: summaryType,
		help: "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles."},
	{name: "go_gc_gogc_percent", rm: rmGOGC},
	{name: "go_gc_gomemlimit_bytes", rm: rmGOMEMLIMIT},
	{name: "go_goroutines", typ: gaugeType, help: "Number of goroutines that currently exist.",
		value: func(*runtimeRead) float64 { return float64(runtime.NumGoroutine()) }},
	{name: goInfo, typ: gaugeType, help: "Information about the Go environment."},
	{name: "go_memstats_alloc_bytes", typ: gaugeType,
		help:  "Number of bytes allocated in heap and currently in use. Equals to /memory/classes/heap/objects:bytes.",
		value: func(r *runtimeRead) float64 { return r.u(rmHeapObjectsBytes) }},
	{name: "go_memstats_alloc_bytes_total", typ: counterType,
		help:  "Total number of bytes allocated in heap until now, even if released already. Equals to /gc/heap/allocs:bytes.",
		value: func(r *runtimeRead) float64 { return r.u(rmAllocsBytes) }},
	{name: "go_memstats_buck_hash_sys_bytes", typ: gaugeType,
		help:  "Number of bytes used by the profiling bucket hash table. Equals to /memory/classes/profiling/buckets:bytes.",
		value: func(r *runtimeRead) float64 { return r.u(rmProfilingBuckets) }},
	{name: "go_memstats_frees_total", typ: counterType,
		help:  "Total number of heap objects frees. Equals to /gc/heap/frees:objects + /gc/heap/tiny/allocs:objects.",
		value: func(r *runtimeRead) float64 { return r.u(rmFreesObjects) + r.u(rmTinyAllocs) }},
	{name: "go_memstats_gc_sys_bytes", typ: gaugeType,
		help:  "Number of bytes used for garbage collection system metadata. Equals to /memory/classes/metadata/other:bytes.",
		value: func(r *runtimeRead) float64 { return r.u(rmMetadataOther) }},
	{name: "go_memstats_heap_alloc_bytes", typ: gaugeType,
		help:  "Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes. Equals to /memory/classes/heap/objects:bytes.",
		value: func(r *runtimeRead) float64 { return r.u(rmHeapObjectsBytes) }},
	{name: "go_memstats_heap_idle_bytes", typ: gaugeType,
		help:  "Number of heap bytes waiting to be used. Equals to /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes.",
		value: (*runtimeRead).heapIdle},
	{name: "go_memstats_heap_inuse_bytes", typ: gaugeType,
		help:  "Number of heap bytes that are in use. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes",
		value: (*runtimeRead).heapInuse},
	{name: "go_memstats_heap_objects", typ: gaugeType,
		help:  "Number of currently allocated objects. Equals to /gc/heap/objects:objects.",
		value: func(r *runtimeRead) float64 { return r.u(rmHeapObjects) }},
	{name: "go_memstats_heap_released_bytes", typ: gaugeType,
		help:  "Number of heap bytes released to OS. Equals to /memory/classes/heap/released:bytes.",
		value: func(r *runtimeRead) float64 { return r.u(rmHeapReleased) }},
	{name: "go_memstats_heap_sys_bytes", typ: gaugeType,
		help:  "Number of heap bytes obtained from system. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes + /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes.",
		value: func(r *runtimeRead) float64 { return r.heapInuse() + r.heapIdle() }},
	{name: "go_memstats_last_gc_time_seconds", typ: gaugeType,
		help:  "Number of seconds since 1970 of last garbage collection.",
		value: func(r *runtimeRead) float64 { return float64(r.gc.LastGC.UnixNano()) / 1e9 }},
	{name: "go_memstats_mallocs_total", typ: counterType,
		help:  "Total number of heap objects allocated, both live and gc-ed. Semantically a counter version for go_memstats_heap_objects gauge. Equals to /gc/heap/allocs:objects + /gc/heap/tiny/allocs:objects.",
		value: func(r *runtimeRead) float64 { return r.u(rmAllocsObjects) + r.u(rmTinyAllocs) }},
	{name: "go_memstats_mcache_inuse_bytes", typ: gaugeType,
		help:  "Number of bytes in use by mcache structures. Equals to /memory/classes/metadata/mcache/inuse:bytes.",
		value: func(r *runtimeRead) float64 { return r.u(rmMCacheInuse) }},
	{name: "go_memstats_mcache_sys_bytes", typ: gaugeType,
		help:  "Number of bytes used for mcache structures obtained from system. Equals to /memory/classes/metadata/mcache/inuse:bytes + /memory/classes/metadata/mcache/free:bytes.",
		value: func(r *runtimeRead) float64 { return r.u(rmMCacheInuse) + r.u(rmMCacheFree) }},
	{name: "go_memstats_mspan_inuse_bytes", typ: gaugeType,
		help:  "Number of bytes in use by mspan structures. Equals to /memory/classes/metadata/mspan/inuse:bytes.",
		value: func(r *runtimeRead) float64 { return r.u(rmMSpanInuse) }},
	{name: "go_memstats_mspan_sys_bytes", typ: gaugeType,
		help:  "Number of bytes used for mspan structures obtained from system. Equals to /memory/classes/metadata/mspan/inuse:bytes + /memory/classes/metadata/mspan/free:bytes.",
		value: func(r *runtimeRead) float64 { return r.u(rmMSpanInuse) + r.u(rmMSpanFree) }},
	{name: "go_memstats_next_gc_bytes", typ: gaugeType,
		help:  "Number of heap bytes when next garbage collection will take place. Equals to /gc/heap/goal:bytes.",
		value: func(r *runtimeRead) float64 { return r.u(rmHeapGoal) }},
	{name: "go_memstats_other_sys_bytes", typ: gaugeType,
		help:  "Number of bytes used for other system allocations. Equals to /memory/classes/other:bytes.",
		value: func(r *runtimeRead) float64 { return r.u(rmOther) }},
	{name: "go_memstats_stack_inuse_bytes", typ: gaugeType,
		help:  "Number of bytes obtained from system for stack allocator in non-CGO environments. Equals to /memory/classes/heap/stacks:bytes.",
		value: func(r *runtimeRead) float64 { return r.u(rmHeapStacks) }},
	{name: "go_memstats_stack_sys_bytes", typ: gaugeType,
		help:  "Number of bytes obtained from system for stack allocator. Equals to /memory/classes/heap/stacks:bytes + /memory/classes/os-stacks:bytes.",
		value: func(r *runtimeRead) float64 { return r.u(rmHeapStacks) + r.u(rmOSStacks) }},
	{name: "go_memstats_sys_bytes", typ: gaugeType,
		help:  "Number of bytes obtained from system. Equals to /memory/classes/total:byte.",
		value: func(r *runtimeRead) float64 { return r.u(rmTotal) }},
	{name: "go_sched_gomaxprocs_threads", rm: rmGOMAXPROCS},
	{name: "go_threads", typ: gaugeType, help: "Number of OS threads created.",
		value: func(*runtimeRead) float64 {
			n, _ := runtime.ThreadCreateProfile(nil)
			return float64(n)
		}},
}

func newRuntimeStats() *runtimeStats {
	s := &runtimeStats{index: map[string]int{}, goInfo: `version="` + labelEscaper.Replace(runtime.Version()) + `"`}
	s.gc.PauseQuantiles = make([]time.Duration, 5)
	wanted := []string{rmTinyAllocs, rmAllocsObjects, rmFreesObjects, rmAllocsBytes, rmHeapObjects, rmHeapGoal, rmTotal,
		rmHeapObjectsBytes, rmHeapUnused, rmHeapReleased, rmHeapFree, rmHeapStacks, rmOSStacks, rmMSpanInuse, rmMSpanFree,
		rmMCacheInuse, rmMCacheFree, rmProfilingBuckets, rmMetadataOther, rmOther, rmGOGC, rmGOMEMLIMIT, rmGOMAXPROCS}
	descs := map[string]rm.Description{}
	for _, d := range rm.All() {
		if slices.Contains(wanted, d.Name) && (d.Kind == rm.KindUint64 || d.Kind == rm.KindFloat64) {
			s.index[d.Name] = len(s.samples)
			s.samples = append(s.samples, rm.Sample{Name: d.Name})
			descs[d.Name] = d
		}
	}
	for _, f := range runtimeFamilies {
		if f.rm != "" {
			d, ok := descs[f.rm]
			if !ok {
				continue
			}
			f.help, f.typ = d.Description+" Sourced from "+d.Name+".", gaugeType
			if d.Cumulative {
				f.typ = counterType
			}
			f.value = func(r *runtimeRead) float64 { return r.u(d.Name) }
		}
		s.families = append(s.families, f)
	}
	return s
}

// write writes every go_* family.
func (s *runtimeStats) write(e *encoder) {
	rm.Read(s.samples)
	debug.ReadGCStats(&s.gc)
	r := &runtimeRead{s: s, gc: &s.gc}
	for _, f := range s.families {
		if !e.family(f.name, f.help, f.typ) {
			continue
		}
		switch f.name {
		case goGCDurationSeconds:
			writeGCSummary(e, f.name, &s.gc)
		case goInfo:
			e.sample(f.name, "", s.goInfo, "", 1)
		default:
			e.sample(f.name, "", "", "", f.value(r))
		}
	}
}

// gcQuantiles are the quantile labels of the GC pause summary.
var gcQuantiles = [5]string{`quantile="0"`, `quantile="0.25"`, `quantile="0.5"`, `quantile="0.75"`, `quantile="1"`}

// writeGCSummary writes GC pauses as the quantiles 0, .25, .5, .75 and 1,
// their total, and the number of collections.
func writeGCSummary(e *encoder, name string, gc *debug.GCStats) {
	for i, q := range gc.PauseQuantiles {
		e.sample(name, "", "", gcQuantiles[i], q.Seconds())
	}
	e.sample(name, "_sum", "", "", gc.PauseTotal.Seconds())
	e.sample(name, "_count", "", "", float64(gc.NumGC))
}
