package loadgen

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat CPU times. Linux
// reports 100 on every architecture Go supports.
const clockTicks = 100

// ProcUsage is a process's CPU time and resident memory at one moment.
type ProcUsage struct {
	CPU time.Duration
	RSS int64 // bytes
}

// ReadProc reads /proc/<pid>/stat (user+system time) and /proc/<pid>/status
// (VmRSS).
func ReadProc(pid int) (ProcUsage, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ProcUsage{}, err
	}
	// The command name may hold spaces; fields are counted after its ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return ProcUsage{}, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 13 {
		return ProcUsage{}, fmt.Errorf("short /proc/%d/stat", pid)
	}
	// Fields 14 and 15 of stat (utime, stime) are 12 and 13 after ')'.
	utime, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	stime, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return ProcUsage{}, fmt.Errorf("parse /proc/%d/stat times", pid)
	}
	u := ProcUsage{CPU: time.Duration(utime+stime) * time.Second / clockTicks}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ProcUsage{}, err
	}
	for line := range bytes.Lines(status) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			kb, err := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte(" kB"))), 10, 64)
			if err != nil {
				return ProcUsage{}, fmt.Errorf("parse VmRSS: %w", err)
			}
			u.RSS = kb << 10
		}
	}
	return u, nil
}
