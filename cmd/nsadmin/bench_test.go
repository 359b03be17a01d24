package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
)

var (
	buildOnce  sync.Once
	nsadminBin string
	buildErr   error
)

// builtNsadmin builds cmd/nsadmin as `make build` does (static, trimmed,
// stripped): the benchmark times the binary an operator runs, not the
// test binary.
func builtNsadmin(b *testing.B) string {
	b.Helper()
	buildOnce.Do(func() {
		nsadminBin = filepath.Join(filepath.Dir(namesrvBin), "nsadmin")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", nsadminBin, "github.com/kube-namesrv/kube-namesrv/cmd/nsadmin")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building nsadmin: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	return nsadminBin
}

// BenchmarkProcess times whole nsadmin runs, process start to exit,
// against three namesrv processes on loopback holding ten brokers of 100
// topics each: what an operator waits for. It reports the median and the
// 90th percentile of the runs besides the mean (ns/op); "version" is the
// floor, a process that starts and exits without asking anyone.
//
//	go test -run '^$' -bench BenchmarkProcess -benchtime 200x ./cmd/nsadmin/
func BenchmarkProcess(b *testing.B) {
	bin := builtNsadmin(b)
	peers := startPeers(b, 3)
	for i := range 10 {
		topics := []body.TopicConfig{brokersim.Topic("TBW102", 8)}
		for j := range 100 {
			topics = append(topics, brokersim.Topic(fmt.Sprintf("Topic-%d", j), 8))
		}
		register(b, startBroker(b, fmt.Sprintf("broker-%d", i), topics...), peers...)
	}
	n := list(peers)
	for _, bc := range []struct {
		name string
		args []string
	}{
		// Process start and exit alone, no NameServer asked: the floor.
		{"version", []string{"version"}},
		{"topicRoute", []string{"topicRoute", "-t", "Topic-7", "-n", n}},
		{"clusterList", []string{"clusterList", "-n", n}},
		{"diff", []string{"diff", "-n", n}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var runs []time.Duration
			for b.Loop() {
				start := time.Now()
				cmd := exec.Command(bin, bc.args...)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("nsadmin %v: %v\n%s", bc.args, err, out)
				}
				runs = append(runs, time.Since(start))
			}
			slices.Sort(runs)
			b.ReportMetric(float64(runs[len(runs)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(runs[len(runs)*9/10].Microseconds())/1000, "p90-ms")
		})
	}
}
