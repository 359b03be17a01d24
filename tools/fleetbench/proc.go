package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/kube-namesrv/kube-namesrv/tools/loadgen"
)

// procUsage is the manager's CPU time and memory at one moment.
type procUsage struct {
	at  time.Time
	cpu time.Duration
	rss int64 // VmRSS, bytes
	hwm int64 // VmHWM, the peak RSS so far, bytes
}

// readProc reads /proc/<pid>/stat and /proc/<pid>/status.
func readProc(pid int) (procUsage, error) {
	u, err := loadgen.ReadProc(pid)
	if err != nil {
		return procUsage{}, fmt.Errorf("reading the manager's /proc: %w", err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procUsage{}, fmt.Errorf("reading the manager's /proc: %w", err)
	}
	hwm, err := statusKB(status, "VmHWM:")
	if err != nil {
		return procUsage{}, err
	}
	return procUsage{at: time.Now(), cpu: u.CPU, rss: u.RSS, hwm: hwm}, nil
}

// statusKB is a "<field> <n> kB" line of /proc/<pid>/status, in bytes.
func statusKB(status []byte, field string) (int64, error) {
	for line := range bytes.Lines(status) {
		if rest, ok := bytes.CutPrefix(line, []byte(field)); ok {
			kb, err := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte(" kB"))), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parsing %s of /proc status: %w", field, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc status", field)
}
