package body

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
)

// benchBody is a body of n topics named and laid out like the load
// generator's (internal/loadgen): what a 5.x broker sends.
func benchBody(tb testing.TB, n int, compressed bool) []byte {
	tb.Helper()
	rb := &RegisterBody{DataVersion: DataVersion{Counter: 1, Timestamp: 1700000000000}, FilterServers: []string{}}
	rb.Topics = make([]TopicConfig, n)
	for i := range rb.Topics {
		rb.Topics[i] = TopicConfig{Name: fmt.Appendf(nil, "broker-000-topic-%05d", i), ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6}
	}
	data, err := EncodeRegisterBody(rb, Broker5, compressed)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// BenchmarkBodyByteScan is the reference the registration decode is held
// to: one pass over the body that looks at every byte once (counting the
// quotes, the least any byte-by-byte scanner does), nothing decoded.
func BenchmarkBodyByteScan(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			data := benchBody(b, n, false)
			b.SetBytes(int64(len(data)))
			quotes := 0
			start := processCPU(b)
			for b.Loop() {
				quotes = 0
				for _, c := range data {
					if c == '"' {
						quotes++
					}
				}
			}
			reportCPU(b, start)
			if quotes == 0 {
				b.Fatal("no quotes")
			}
		})
	}
}

// BenchmarkDecodeRegisterBody is the decode alone, JSON and zlib, of a
// 5.x broker's body, released after each as the processor releases it.
func BenchmarkDecodeRegisterBody(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		for _, compressed := range []bool{false, true} {
			form := "json"
			if compressed {
				form = "zlib"
			}
			b.Run(fmt.Sprintf("%s/%d", form, n), func(b *testing.B) {
				data := benchBody(b, n, compressed)
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				start := processCPU(b)
				for b.Loop() {
					rb, err := DecodeRegisterBody(data, RegisterOptions{Version: protocol.V5_3_3})
					if err != nil || len(rb.Topics) != n {
						b.Fatalf("%d topics, %v", len(rb.Topics), err)
					}
					rb.Release()
				}
				reportCPU(b, start)
			})
		}
	}
}

// BenchmarkInflate is the inflate of a zlib body alone, its buffer
// recycled as Release recycles it.
func BenchmarkInflate(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			data := benchBody(b, n, true)
			raw, err := inflate(data, 0)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			start := processCPU(b)
			for b.Loop() {
				raw, err := inflate(data, 0)
				if err != nil {
					b.Fatal(err)
				}
				(&RegisterBody{inflated: raw}).Release()
			}
			reportCPU(b, start)
		})
	}
}

// processCPU is the CPU time this process has used, every thread
// included. On a shared machine a benchmark's wall time per op counts the
// time other processes held the CPU; its CPU time per op (reported as
// cpu-ns/op) does not.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per op since start.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(processCPU(b)-start)/float64(b.N), "cpu-ns/op")
}
