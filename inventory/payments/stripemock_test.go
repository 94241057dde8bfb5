package payments

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startStripeMock runs a stripe-mock (github.com/stripe/stripe-mock, which
// .ci/run installs) on free loopback ports for the test and returns its
// HTTP base URL.
func startStripeMock(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("stripe-mock")
	if err != nil {
		gopath, gerr := exec.Command("go", "env", "GOPATH").Output()
		cand := filepath.Join(strings.TrimSpace(string(gopath)), "bin", "stripe-mock")
		if _, serr := os.Stat(cand); gerr != nil || serr != nil {
			t.Fatal("stripe-mock is not installed (on PATH or in $(go env GOPATH)/bin): " +
				"go install github.com/stripe/stripe-mock@v0.203.0")
		}
		bin = cand
	}
	cmd := exec.Command(bin, "-http-addr", "127.0.0.1:0", "-https-addr", "127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("start stripe-mock: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			// "Listening for HTTP at address: 127.0.0.1:33721"
			if a, ok := strings.CutPrefix(sc.Text(), "Listening for HTTP at address: "); ok && !sent {
				addr <- a
				sent = true
			}
		}
	}()
	select {
	case a := <-addr:
		return "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatal("stripe-mock did not say where it listens")
	}
	return ""
}
