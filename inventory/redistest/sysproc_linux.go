package redistest

import "syscall"

// sysProcAttr has the kernel kill a redis-server when the test binary that
// started it dies (go test's -timeout panics and exits without running
// Cleanups): a left-over server would hold its port and memory, and a
// paused one would never end.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
