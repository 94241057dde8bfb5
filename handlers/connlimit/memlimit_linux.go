package connlimit

import (
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
)

// MemoryLimit is the memory limit of the process's cgroup (v2
// memory.max, v1 memory.limit_in_bytes), the container's memory; 0 when
// there is none or it cannot be read.
func MemoryLimit() uint64 { return cgroupMemoryLimit(os.DirFS("/")) }

// cgroupMemoryLimit reads the limit under root (the file system's root):
// the smallest of the process's cgroup's own file (from /proc/self/cgroup)
// and the one at the top of the mount (a container sees its cgroup there).
func cgroupMemoryLimit(root fs.FS) uint64 {
	data, err := fs.ReadFile(root, "proc/self/cgroup")
	if err != nil {
		return 0
	}
	var files []string
	for line := range strings.Lines(string(data)) {
		// hierarchy-ID:controllers:path
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "": // v2
			files = append(files, path.Join("sys/fs/cgroup", f[2], "memory.max"), "sys/fs/cgroup/memory.max")
		case slices.Contains(strings.Split(f[1], ","), "memory"): // v1
			files = append(files, path.Join("sys/fs/cgroup/memory", f[2], "memory.limit_in_bytes"),
				"sys/fs/cgroup/memory/memory.limit_in_bytes")
		}
	}
	var limit uint64
	for _, name := range files {
		b, err := fs.ReadFile(root, name)
		if err != nil {
			continue
		}
		// "max" (v2) and v1's page-rounded 2^63 mean no limit.
		v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || v == 0 || v >= 1<<62 {
			continue
		}
		if limit == 0 || v < limit {
			limit = v
		}
	}
	return limit
}
