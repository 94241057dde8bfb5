package apidoc_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/handlers/apidoc"
)

// oapiCodegen is the client generator the README shows partners.
const oapiCodegen = "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2"

// TestGeneratedClientCompiles runs oapi-codegen on the document, as the
// README tells a partner to, into a module of its own, and builds the
// client. It is skipped (not failed) when the generator or the client's
// runtime cannot be downloaded: no network, no module proxy. It takes
// about 15 s with a warm module and build cache (the client is some
// 50,000 lines), a minute cold: it runs beside the package's other tests.
func TestGeneratedClientCompiles(t *testing.T) {
	t.Parallel()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("openapi.json", string(apidoc.Document))
	write("go.mod", "module example.com/ticketdclient\n\ngo 1.24\n")
	run := func(args ...string) (string, error) {
		cmd := exec.Command(gobin, args...)
		cmd.Dir = dir
		// The temporary module is not this repository's: no workspace,
		// and go.mod may gain the client's requirements.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("run", oapiCodegen, "-generate", "types,client", "-package", "ticketd", "-o", "client.go", "openapi.json"); err != nil {
		skipIfOffline(t, out)
		t.Fatalf("oapi-codegen: %v\n%s", err, out)
	}
	if out, err := run("mod", "tidy"); err != nil {
		skipIfOffline(t, out)
		t.Fatalf("go mod tidy of the generated client: %v\n%s", err, out)
	}
	if out, err := run("build", "./..."); err != nil {
		t.Fatalf("the generated client does not build: %v\n%s", err, out)
	}
}

// skipIfOffline skips the test when out says a module could not be
// downloaded.
func skipIfOffline(t *testing.T, out string) {
	t.Helper()
	for _, s := range []string{"dial tcp", "no such host", "connection refused", "i/o timeout", "GOPROXY=off",
		"module lookup disabled", "proxyconnect", "TLS handshake timeout", "server response: 4", "server response: 5"} {
		if strings.Contains(out, s) {
			t.Skipf("cannot download the generator or its runtime: %s", strings.TrimSpace(out))
		}
	}
}
