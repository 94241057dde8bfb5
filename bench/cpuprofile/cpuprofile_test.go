package cpuprofile

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestSlicesAreMergedIntoOneProfile: a window longer than a slice is
// profiled in back-to-back slices, End waits for the one under way, and
// Write leaves one profile go tool pprof reads.
func TestSlicesAreMergedIntoOneProfile(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	srv := httptest.NewServer(mux) // this process, profiled
	defer srv.Close()
	p := New(srv.URL)
	p.Begin()
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); {
		_ = bytes.Repeat([]byte("x"), 1<<10) // some CPU to sample
	}
	p.End()
	path := filepath.Join(t.TempDir(), "cpu.prof")
	n, err := p.Write(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if n < 2 {
		t.Fatalf("%d slices for 1.5 s, want 2 or more", n)
	}
	out, err := exec.Command("go", "tool", "pprof", "-raw", path).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("PeriodType: cpu")) {
		t.Fatalf("go tool pprof does not read the merged profile: %v\n%s", err, out)
	}
	if _, err := p.Write(context.Background(), path+"2"); err == nil {
		t.Fatal("Write again: the slices were written already")
	}
	if _, err := os.Stat(path + "2"); err == nil {
		t.Fatal("an empty profile was written")
	}
}
