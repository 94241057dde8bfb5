// Package stripemock starts a stripe-mock (github.com/stripe/stripe-mock,
// the Stripe API double `make stripe-mock` installs) for a test. It is used
// by tests only: the payments package's and a whole ticketd's.
package stripemock

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Start runs a stripe-mock on free loopback ports until t ends and
// returns its HTTP base URL (STRIPE_API_BASE). stripe-mock keeps no
// state: every call answers its fixture, with a fresh id on a create.
func Start(t testing.TB) string {
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
	// The address, or what it printed instead when it exits without one.
	addr := make(chan string, 1)
	failed := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sent := false
		var said []string
		for sc.Scan() {
			// "Listening for HTTP at address: 127.0.0.1:33721"
			if a, ok := strings.CutPrefix(sc.Text(), "Listening for HTTP at address: "); ok && !sent {
				addr <- a
				sent = true
			} else if !sent && len(said) < 20 {
				said = append(said, sc.Text())
			}
		}
		if !sent {
			failed <- strings.Join(said, "\n")
		}
	}()
	select {
	case a := <-addr:
		return "http://" + a
	case said := <-failed:
		t.Fatalf("stripe-mock exited without listening:\n%s", said)
	case <-time.After(30 * time.Second):
		t.Fatal("stripe-mock did not say where it listens")
	}
	return ""
}
