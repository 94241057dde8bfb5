//go:build !linux

package redistest

import "syscall"

// sysProcAttr: only Linux has a parent-death signal; elsewhere a server
// outlives a test binary that dies without running its Cleanups.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
