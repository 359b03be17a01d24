package main

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestMixedAlternatesWindows runs the mixed mode in alternating windows
// against a spawned server: the storm registers in storm windows only, and
// both phases and the per-window ratios are reported.
func TestMixedAlternatesWindows(t *testing.T) {
	var out bytes.Buffer
	err := run([]string{"-spawn", namesrvBin, "-mode", "mixed", "-conns", "1", "-inflight", "4", "-topics", "20",
		"-duration", "1500ms", "-warmup", "0s", "-brokers", "2", "-topics-per-broker", "50", "-interval", "50ms",
		"-windows", "3"}, &out)
	if err != nil {
		t.Fatalf("mixed: %v\n%s", err, out.String())
	}
	text := out.String()
	m := regexp.MustCompile(`storm: (\d+) registrations meanwhile \((\d+) errors, (\d+) in quiet windows\)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no storm line:\n%s", text)
	}
	regs, _ := strconv.Atoi(m[1])
	// 2 brokers, 3 storm windows of 500 ms, one registration per 50 ms.
	if regs < 6 {
		t.Errorf("%d registrations in the storm windows, want at least one per broker and window:\n%s", regs, text)
	}
	if m[2] != "0" || m[3] != "0" {
		t.Errorf("%s errors and %s registrations in quiet windows, want none:\n%s", m[2], m[3], text)
	}
	for _, want := range []string{"quiet: latency p50", "storm: latency p50", "route p99 during the storm is",
		"per-window p99 ratios over 3 windows of 500ms"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "not every storm broker parked") {
		t.Errorf("a broker did not park between windows:\n%s", text)
	}
}

func TestMixedRefusesBadWindows(t *testing.T) {
	for _, args := range [][]string{
		{"-windows", "0"},
		{"-windows", "-2"},
		{"-windows", "50", "-duration", "1s"},
	} {
		var out bytes.Buffer
		err := run(append([]string{"-mode", "mixed", "-addr", "127.0.0.1:1"}, args...), &out)
		if err == nil || !strings.Contains(err.Error(), "-windows") {
			t.Errorf("%v: err %v, want a -windows error", args, err)
		}
	}
}
