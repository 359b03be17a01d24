package box

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A run's work directory is <parent>/<runPrefix><random>, and the root of
// its pods' cgroups has the same base name in every cgroup hierarchy. The
// directory holds a lock file that the run keeps locked (flock) while it
// lives: a work directory or a cgroup root whose lock nobody holds belongs
// to a dead run and is swept.
const (
	runPrefix = "kne-"
	lockName  = "lock"
)

// cgroupMounts lists the mount points of the cgroup hierarchies (v1 and
// v2) in this mount namespace.
func cgroupMounts() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("box: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 0 || sep+1 >= len(fields) || len(fields) < 5 {
			continue
		}
		if t := fields[sep+1]; t == "cgroup" || t == "cgroup2" {
			out = append(out, unescapeMountPath(fields[4]))
		}
	}
	return out, sc.Err()
}

// mountPoints lists every mount point of this mount namespace, in the order
// of /proc/self/mountinfo (a mount after the one it sits on).
func mountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("box: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) >= 5 {
			out = append(out, unescapeMountPath(fields[4]))
		}
	}
	return out, sc.Err()
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmountUnder detaches every mount at or below one of the prefixes,
// deepest first, so that the directories under them can be removed.
func unmountUnder(prefixes ...string) error {
	mps, err := mountPoints()
	if err != nil {
		return err
	}
	var errs []error
	for i := len(mps) - 1; i >= 0; i-- {
		mp := mps[i]
		for _, p := range prefixes {
			if mp == p || strings.HasPrefix(mp, strings.TrimSuffix(p, "/")+"/") {
				if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
					errs = append(errs, fmt.Errorf("box: unmount %s: %w", mp, err))
				}
				break
			}
		}
	}
	return errors.Join(errs...)
}

// createCgroupRoot creates the run's cgroup root in every hierarchy. The
// kubelet requires its cgroupRoot to exist; a new cpuset cgroup starts with
// no CPUs and no memory nodes, so it gets its parent's.
func createCgroupRoot(name string) error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	for _, m := range mounts {
		dir := filepath.Join(m, name)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("box: cgroup %s: %w", dir, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			v, err := os.ReadFile(filepath.Join(m, f))
			if err != nil {
				continue // not the cpuset hierarchy
			}
			if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
				return fmt.Errorf("box: cgroup %s: %w", filepath.Join(dir, f), err)
			}
		}
	}
	return nil
}

// sweepCgroup kills every process in the cgroup root name (in every
// hierarchy, every descendant) and removes the cgroups, deepest first.
// Processes the kubelet left running when it stopped (every pod's) end here.
func sweepCgroup(name string, timeout time.Duration) error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	var dirs []string
	for _, m := range mounts {
		root := filepath.Join(m, name)
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
	}
	if len(dirs) == 0 {
		return nil
	}
	deadline := time.Now().Add(timeout)
	for {
		live := 0
		for _, d := range dirs {
			for _, pid := range cgroupPIDs(d) {
				live++
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if live == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("box: cgroup %s: %d processes survived SIGKILL for %v", name, live, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Deepest first: a cgroup with children cannot be removed.
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	var errs []error
	for _, d := range dirs {
		err := poll("removing cgroup "+d, timeout, func() error {
			err := os.Remove(d)
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// cgroupPIDs are the processes of one cgroup, as this PID namespace numbers
// them (0, for a process outside it, is skipped).
func cgroupPIDs(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	return out
}

// lockRun creates and locks the run's lock file; the lock lives as long as
// the returned file stays open (the process, at the latest).
func lockRun(workDir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(workDir, lockName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("box: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("box: locking %s: %w", f.Name(), err)
	}
	return f, nil
}

// live tells whether the run of a work directory still holds its lock. A
// directory without a lock file is not a run's (a failed run's kept logs).
func live(workDir string) (bool, error) {
	f, err := os.Open(filepath.Join(workDir, lockName))
	if errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if err != nil {
		return false, fmt.Errorf("box: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true, nil
	}
	return false, nil
}

// sweepStale removes what runs that died left behind: the pods' cgroups of
// every run whose work directory is gone or unlocked, and those work
// directories (their mounts died with their mount namespace). Live runs,
// another test's say, are left alone.
func sweepStale(parent string) error {
	var errs []error
	dirs, err := filepath.Glob(filepath.Join(parent, runPrefix+"*"))
	if err != nil {
		return fmt.Errorf("box: %w", err)
	}
	liveRuns := map[string]bool{}
	for _, d := range dirs {
		isLive, err := live(d)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			errs = append(errs, err)
			liveRuns[filepath.Base(d)] = true
		case isLive:
			liveRuns[filepath.Base(d)] = true
		default:
			if err := sweepCgroup(filepath.Base(d), 30*time.Second); err != nil {
				errs = append(errs, err)
			}
			if err := os.RemoveAll(d); err != nil {
				errs = append(errs, fmt.Errorf("box: removing the stale work directory: %w", err))
			}
		}
	}
	mounts, err := cgroupMounts()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	swept := map[string]bool{}
	for _, m := range mounts {
		roots, _ := filepath.Glob(filepath.Join(m, runPrefix+"*"))
		for _, r := range roots {
			name := filepath.Base(r)
			if liveRuns[name] || swept[name] {
				continue
			}
			swept[name] = true
			if err := sweepCgroup(name, 30*time.Second); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
