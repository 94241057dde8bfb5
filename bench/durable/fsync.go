package durable

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// FsyncTime appends a 4 KiB block to a scratch file in dir and fsyncs it,
// n times, as Redis appends to its AOF with appendfsync always, and
// returns the median and the 99th percentile. The file is removed.
func FsyncTime(dir string, n int) (p50, p99 time.Duration, err error) {
	if n <= 0 {
		return 0, 0, fmt.Errorf("durable: fsync probe needs n > 0")
	}
	f, err := os.CreateTemp(dir, "fsync-probe-")
	if err != nil {
		return 0, 0, fmt.Errorf("durable: fsync probe: %w", err)
	}
	defer os.Remove(filepath.Clean(f.Name()))
	defer f.Close()
	block := make([]byte, 4096)
	took := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if _, err := f.Write(block); err != nil {
			return 0, 0, fmt.Errorf("durable: fsync probe: %w", err)
		}
		if err := f.Sync(); err != nil {
			return 0, 0, fmt.Errorf("durable: fsync probe: %w", err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	return took[len(took)/2], took[min(len(took)-1, len(took)*99/100)], nil
}
