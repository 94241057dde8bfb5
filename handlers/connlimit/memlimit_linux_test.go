package connlimit

import (
	"testing"
	"testing/fstest"
)

// The cgroup's memory limit is read from v2 and v1 layouts, the
// process's own cgroup or the mount's top (a container's view); "max" and
// v1's "unlimited" are no limit.
func TestCgroupMemoryLimit(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	for name, c := range map[string]struct {
		fs   fstest.MapFS
		want uint64
	}{
		"v2, own cgroup": {fstest.MapFS{
			"proc/self/cgroup": file("0::/system.slice/ticketd.service\n"),
			"sys/fs/cgroup/system.slice/ticketd.service/memory.max": file("536870912\n"),
		}, 512 << 20},
		"v2, container root": {fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("1073741824\n"),
		}, 1 << 30},
		"v2, max": {fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("max\n"),
		}, 0},
		"v1, namespaced": {fstest.MapFS{
			"proc/self/cgroup":                           file("5:cpuacct,cpu:/\n4:memory:/process_api/e0e4\n0::/\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes": file("268435456\n"),
		}, 256 << 20},
		"v1, unlimited": {fstest.MapFS{
			"proc/self/cgroup":                           file("4:memory:/\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes": file("9223372036854771712\n"),
		}, 0},
		"no cgroups": {fstest.MapFS{}, 0},
	} {
		if got := cgroupMemoryLimit(c.fs); got != c.want {
			t.Errorf("%s: %d, want %d", name, got, c.want)
		}
	}
}
