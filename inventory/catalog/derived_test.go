package catalog

import (
	"sync"
	"sync/atomic"
	"testing"
)

// A value derived from a snapshot is built once for it and rebuilt when a
// newer snapshot comes, also when many requests ask at once.
func TestDerivedBuildsOncePerSnapshot(t *testing.T) {
	var d Derived[int64]
	var builds atomic.Int32
	build := func(s *Snapshot) *int64 {
		builds.Add(1)
		v := s.Version
		return &v
	}
	s1, s2 := &Snapshot{Version: 1}, &Snapshot{Version: 2}
	first := d.Of(s1, build)
	if *first != 1 || d.Of(s1, build) != first || builds.Load() != 1 {
		t.Fatalf("snapshot 1: %d, %d builds", *first, builds.Load())
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v := d.Of(s2, build); *v != 2 {
				t.Errorf("snapshot 2 gave %d", *v)
			}
		}()
	}
	wg.Wait()
	n := builds.Load()
	if v := d.Of(s2, build); *v != 2 || builds.Load() != n {
		t.Fatalf("snapshot 2 after it was built: %d, rebuilt %v", *v, builds.Load() != n)
	}
}
