//go:build !linux

package redistest

import "syscall"

// sysProcAttr: only Linux has a parent-death signal; elsewhere a server
// outlives a test binary that dies without running its Cleanups. The
// server leads a process group of its own, so that kill reaches the
// children it forks (an AOF rewrite, an RDB save).
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// groupRunning says whether a process of group pgid still exists (a zombie
// counts: without /proc there is no telling it apart).
func groupRunning(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }
