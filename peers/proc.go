package peers

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// What a server process and its descendants (nginx's workers, h2o's helpers)
// use, from /proc: resident memory and CPU time, for benchmarks that charge a
// server for its resources.

// TreeRSS is the resident set size in bytes of pid and its descendants.
func TreeRSS(pid int) (int64, error) {
	return sumTree(pid, func(p int) (int64, error) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
		if err != nil {
			return 0, err
		}
		n, err := ParseVmRSS(b)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/status: %w", p, err)
		}
		return n, nil
	})
}

// TreeCPU is the user plus system CPU time of pid and its live descendants,
// every thread included.
func TreeCPU(pid int) (time.Duration, error) {
	ticks, err := sumTree(pid, func(p int) (int64, error) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			return 0, err
		}
		u, s, err := ParseStatCPU(b)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", p, err)
		}
		return u + s, nil
	})
	return time.Duration(ticks) * time.Second / userHZ, err
}

// userHZ is the unit of /proc's CPU times, fixed at 100 by Linux's ABI
// whatever the kernel's own tick rate.
const userHZ = 100

// sumTree adds f over pid and its descendants; a descendant that exits
// meanwhile is skipped, pid's own error is returned.
func sumTree(pid int, f func(pid int) (int64, error)) (int64, error) {
	total, err := f(pid)
	if err != nil {
		return 0, err
	}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		kids, _ := os.ReadFile(t)
		for _, k := range strings.Fields(string(kids)) {
			child, err := strconv.Atoi(k)
			if err != nil {
				continue
			}
			if n, err := sumTree(child, f); err == nil {
				total += n
			}
		}
	}
	return total, nil
}

// ParseVmRSS reads the VmRSS line of /proc/PID/status, in bytes.
func ParseVmRSS(status []byte) (int64, error) {
	for line := range bytes.Lines(status) {
		if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			f := strings.Fields(string(v))
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err != nil || kb < 0 {
					return 0, fmt.Errorf("VmRSS %q: not a size", f[0])
				}
				return kb * 1024, nil
			}
			return 0, fmt.Errorf("VmRSS line %q", line)
		}
	}
	return 0, errors.New("no VmRSS line")
}

// ParseStatCPU reads utime and stime (fields 14 and 15, in ticks of
// 1/userHZ s) from /proc/PID/stat. The command name (field 2) is in
// parentheses and may hold spaces and parentheses, so fields are counted
// from its last ')'.
func ParseStatCPU(stat []byte) (utime, stime int64, err error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, errors.New("no command name in parentheses")
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("%d fields after the command name, want at least 13", len(f))
	}
	if utime, err = strconv.ParseInt(f[11], 10, 64); err != nil || utime < 0 {
		return 0, 0, fmt.Errorf("utime %q: not a tick count", f[11])
	}
	if stime, err = strconv.ParseInt(f[12], 10, 64); err != nil || stime < 0 {
		return 0, 0, fmt.Errorf("stime %q: not a tick count", f[12])
	}
	return utime, stime, nil
}

// RaiseFileLimit raises this process's limit of open files to at least n
// (the hard limit too, which root may), for a benchmark that holds many
// connections here and in the servers it starts: after an explicit
// Setrlimit, Go's os/exec no longer restores for children the limit it
// found at start, so they inherit this one.
func RaiseFileLimit(n uint64) error {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return err
	}
	if l.Cur >= n {
		return nil
	}
	l.Cur, l.Max = n, max(l.Max, n)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return fmt.Errorf("open files: need %d, the limit is lower and could not be raised: %w (ulimit -n)", n, err)
	}
	return nil
}
