package metrics

import (
	"bytes"
	"encoding/binary"
	"os"
	"syscall"
)

// The process's series, under the names and HELP texts of the Prometheus
// Go client's process collector, read from /proc as it reads them. A
// source that cannot be read leaves its series out of the scrape, as that
// collector does. The files are read into one buffer kept from scrape to
// scrape: what a scrape allocates, an idle NameServer keeps resident until
// its heap first reaches the collector's goal.

// userHZ is the unit of the CPU times in /proc/<pid>/stat (USER_HZ, 100
// on every Linux architecture).
const userHZ = 100

// processStats reads /proc; it is used by one scrape at a time.
type processStats struct {
	buf []byte
	// bootSec is the boot time (btime in /proc/stat), read once: the
	// file's other lines grow with the number of CPUs and interrupts.
	bootSec float64
	bootOK  bool
	booted  bool
}

func newProcessStats() *processStats { return &processStats{buf: make([]byte, 8<<10)} }

// read reads a whole file into the buffer, growing it when the file does
// not fit.
func (p *processStats) read(path string) ([]byte, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	n := 0
	for {
		if n == len(p.buf) {
			p.buf = append(p.buf, make([]byte, len(p.buf))...)
		}
		m, err := f.Read(p.buf[n:])
		n += m
		if err != nil || m == 0 {
			return p.buf[:n], n > 0
		}
	}
}

// field returns the n-th space-separated field of b (from 0), or nil.
func field(b []byte, n int) []byte {
	for ; ; n-- {
		b = bytes.TrimLeft(b, " ")
		end := bytes.IndexByte(b, ' ')
		if end < 0 {
			end = len(b)
		}
		if n == 0 {
			return b[:end]
		}
		if end == len(b) {
			return nil
		}
		b = b[end:]
	}
}

func parseUint(b []byte) (float64, bool) {
	var v uint64
	if len(b) == 0 {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return float64(v), true
}

// procStat holds the fields of /proc/self/stat the series need.
type procStat struct {
	utime, stime, start, vsize, rss float64
}

// parseStat reads /proc/<pid>/stat, whose fields are numbered from 1 as
// proc(5) does (state is 3, after the command name, which is in
// parentheses and may hold spaces and parentheses).
func parseStat(b []byte) (procStat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	rest := bytes.TrimRight(b[i+1:], "\n")
	var s procStat
	ok := true
	for _, f := range []struct {
		n int
		v *float64
	}{{14, &s.utime}, {15, &s.stime}, {22, &s.start}, {23, &s.vsize}, {24, &s.rss}} {
		v, good := parseUint(field(rest, f.n-3))
		*f.v, ok = v, ok && good
	}
	return s, ok
}

// ipOctets reads InOctets and OutOctets from the IpExt lines of
// /proc/<pid>/net/netstat: a line of names, then a line of values.
func ipOctets(netstat []byte) (in, out float64, ok bool) {
	for len(netstat) > 0 {
		var names, values []byte
		names, netstat, _ = bytes.Cut(netstat, []byte("\n"))
		values, netstat, _ = bytes.Cut(netstat, []byte("\n"))
		if bytes.Count(names, []byte(" ")) != bytes.Count(values, []byte(" ")) {
			return 0, 0, false
		}
		if !bytes.HasPrefix(names, []byte("IpExt: ")) {
			continue
		}
		for i := 1; ; i++ {
			name := field(names, i)
			if name == nil {
				break
			}
			v, good := parseUint(field(values, i))
			if !good {
				return 0, 0, false
			}
			switch string(name) {
			case "InOctets":
				in = v
			case "OutOctets":
				out = v
			}
		}
	}
	return in, out, true
}

// openFDs counts the entries of /proc/self/fd, the directory's own
// descriptor included, as the Go client counts them, without a string per
// descriptor (a busy NameServer has thousands).
func (p *processStats) openFDs() (int, bool) {
	fd, err := syscall.Open("/proc/self/fd", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	defer syscall.Close(fd)
	count := 0
	for {
		n, err := syscall.ReadDirent(fd, p.buf)
		if err != nil {
			return 0, false
		}
		if n == 0 {
			return count, true
		}
		// linux_dirent64: inode (8 bytes), offset (8), record length (2),
		// type (1), then the NUL-terminated name.
		for b := p.buf[:n]; len(b) >= 20; {
			reclen := int(binary.NativeEndian.Uint16(b[16:]))
			if reclen < 20 || reclen > len(b) {
				return 0, false
			}
			if name := b[19:reclen]; !bytes.HasPrefix(name, []byte(".\x00")) && !bytes.HasPrefix(name, []byte("..\x00")) {
				count++
			}
			b = b[reclen:]
		}
	}
}

// bootTime is btime of /proc/stat, read at the first scrape.
func (p *processStats) bootTime() (float64, bool) {
	if !p.booted {
		p.booted = true
		if b, err := os.ReadFile("/proc/stat"); err == nil {
			for len(b) > 0 {
				var line []byte
				line, b, _ = bytes.Cut(b, []byte("\n"))
				if v, found := bytes.CutPrefix(line, []byte("btime ")); found {
					p.bootSec, p.bootOK = parseUint(bytes.TrimSpace(v))
				}
			}
		}
	}
	return p.bootSec, p.bootOK
}

// write writes every process_* family, in name order.
func (p *processStats) write(e *encoder) {
	one := func(ok bool, name, help, typ string, v float64) {
		if ok && e.family(name, help, typ) {
			e.sample(name, "", "", "", v)
		}
	}
	var st procStat
	b, statOK := p.read("/proc/self/stat")
	if statOK {
		st, statOK = parseStat(b)
	}
	var files, as syscall.Rlimit
	limOK := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &files) == nil && syscall.Getrlimit(syscall.RLIMIT_AS, &as) == nil
	var in, out float64
	b, netOK := p.read("/proc/self/net/netstat")
	if netOK {
		in, out, netOK = ipOctets(b)
	}
	fds, fdsOK := p.openFDs()
	boot, bootOK := p.bootTime()

	one(statOK, "process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", counterType, (st.utime+st.stime)/userHZ)
	one(limOK, "process_max_fds", "Maximum number of open file descriptors.", gaugeType, float64(files.Cur))
	one(netOK, "process_network_receive_bytes_total", "Number of bytes received by the process over the network.", counterType, in)
	one(netOK, "process_network_transmit_bytes_total", "Number of bytes sent by the process over the network.", counterType, out)
	one(fdsOK, "process_open_fds", "Number of open file descriptors.", gaugeType, float64(fds))
	one(statOK, "process_resident_memory_bytes", "Resident memory size in bytes.", gaugeType, st.rss*float64(os.Getpagesize()))
	one(statOK && bootOK, "process_start_time_seconds", "Start time of the process since unix epoch in seconds.", gaugeType, boot+st.start/userHZ)
	one(statOK, "process_virtual_memory_bytes", "Virtual memory size in bytes.", gaugeType, st.vsize)
	one(limOK, "process_virtual_memory_max_bytes", "Maximum amount of virtual memory available in bytes.", gaugeType, float64(as.Cur))
}
