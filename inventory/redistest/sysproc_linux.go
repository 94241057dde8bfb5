package redistest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// sysProcAttr has the kernel kill a redis-server when the test binary that
// started it dies (go test's -timeout panics and exits without running
// Cleanups): a left-over server would hold its port and memory, and a
// paused one would never end. The server leads a process group of its own,
// so that kill reaches the children it forks (an AOF rewrite, an RDB save).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// groupRunning says whether a process of group pgid still runs: one that
// is neither gone nor a zombie (a zombie writes nothing, and an orphan's
// zombie waits for whoever reaps it).
func groupRunning(pgid int) bool {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and
		// parentheses, so the fields start after its last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := bytes.Fields(b[i+1:])
		if len(fields) < 3 || string(fields[0]) == "Z" || string(fields[0]) == "X" {
			continue
		}
		if g, err := strconv.Atoi(string(fields[2])); err == nil && g == pgid {
			return true
		}
	}
	return false
}
