//go:build unix

package connlimit

import "syscall"

// FileLimit is the process's file descriptor limit (the soft
// RLIMIT_NOFILE, which the Go runtime raises to the hard one at start);
// 0 when it cannot be read.
func FileLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	return uint64(r.Cur) //nolint:unconvert // int64 on some platforms
}
