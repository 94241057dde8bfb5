package apidoc_test

import (
	"bufio"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/handlers/servertest"
)

// CheckCallsEnv names the directory TestEveryOperationIsCalled reads: the
// one every test package wrote its calls to (servertest.CallsEnv).
const CheckCallsEnv = "TICKETD_API_CALLS_CHECK"

// TestEveryOperationIsCalled: every operation of the document was called
// by some test of the run. Each test server (servertest) writes the
// operations it answered to a file under TICKETD_API_CALLS; .ci/test.sh
// runs this test after every package's tests with TICKETD_API_CALLS_CHECK
// set to that directory. Without it (a test run of one package) it is
// skipped: the calls of the other packages are not there to read.
func TestEveryOperationIsCalled(t *testing.T) {
	dir := os.Getenv(CheckCallsEnv)
	if dir == "" {
		t.Skipf("%s is not set: .ci/test.sh sets it after the whole run", CheckCallsEnv)
	}
	files, err := filepath.Glob(filepath.Join(dir, "calls-*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no calls recorded under %s: did the test step run with %s=%s?", dir, servertest.CallsEnv, dir)
	}
	// accepted: the operations some test saw succeed (status < 400),
	// their success schema checked.
	called, accepted := map[string]bool{}, map[string]bool{}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if strings.TrimSpace(line) == "" {
				continue
			}
			c, ok := servertest.ParseCall(line)
			if !ok {
				t.Errorf("%s: %q is not a call servertest writes (servertest.Call)", name, line)
				continue
			}
			op := c.Method + " " + c.Path
			called[op] = true
			if c.Status < 400 {
				accepted[op] = true
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	inDoc := documented(load(t))
	var missing []string
	// (a call is recorded under the document's own template of the
	// route, so every one recorded is in it)
	for _, op := range slices.Sorted(maps.Keys(inDoc)) {
		if !called[op] {
			missing = append(missing, op)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d operations of handlers/apidoc/openapi.json no test called (through a servertest server): write a test that calls each:\n\t%s",
			len(missing), strings.Join(missing, "\n\t"))
	}
	// Reported, not failed: some operations' successes need a processor
	// or a state the tests do not set up.
	var refused []string
	for _, op := range slices.Sorted(maps.Keys(inDoc)) {
		if called[op] && !accepted[op] {
			refused = append(refused, op)
		}
	}
	if len(refused) > 0 {
		t.Logf("called but never answered with a success (its success schema unchecked):\n\t%s", strings.Join(refused, "\n\t"))
	}
	t.Logf("%d of %d operations called (%d files)", len(inDoc)-len(missing), len(inDoc), len(files))
}
