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

// notCalled are the operations no test needs to call, each with its
// reason. Nothing else may go uncalled.
var notCalled = map[string]string{}

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
	called := map[string]bool{}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" {
				called[line] = true
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	inDoc := documented(load(t))
	var missing []string
	for _, op := range slices.Sorted(maps.Keys(inDoc)) {
		if reason, ok := notCalled[op]; ok {
			t.Logf("not called: %s (%s)", op, reason)
			continue
		}
		if !called[op] {
			missing = append(missing, op)
		}
	}
	for op := range notCalled {
		if !inDoc[op] {
			t.Errorf("notCalled lists %s, which the document lacks: drop it", op)
		}
	}
	for op := range called {
		if !inDoc[op] {
			t.Errorf("%s was called but is not in the document (a stale calls file?)", op)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d operations of handlers/apidoc/openapi.json no test called (through a servertest server): write a test that calls each:\n\t%s",
			len(missing), strings.Join(missing, "\n\t"))
	}
	t.Logf("%d of %d operations called (%d files)", len(inDoc)-len(missing), len(inDoc), len(files))
}
