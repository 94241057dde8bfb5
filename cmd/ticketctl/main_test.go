package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ticketd/ticketd/handlers/admin"
	"github.com/ticketd/ticketd/handlers/server"
	"github.com/ticketd/ticketd/inventory/loopback"
)

const catalogDoc = `{"tenants": [{"id": "t_acme", "name": "Acme Live"}]}`

// received is what the fake admin surface saw.
type received struct {
	method, path, auth, contentType string
	body                            string
	query                           string
}

// adminServer answers every request with status and body and records it.
func adminServer(t *testing.T, status int, body string) (*httptest.Server, func() []received) {
	t.Helper()
	var mu sync.Mutex
	var got []received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, received{r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), string(b), r.URL.RawQuery})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []received {
		mu.Lock()
		defer mu.Unlock()
		return append([]received(nil), got...)
	}
}

type result struct {
	code           int
	stdout, stderr string
}

// ticketctl runs the command with the given environment variables and stdin.
func ticketctl(vars map[string]string, stdin string, args ...string) result {
	var out, errb bytes.Buffer
	code := run(args, env{
		stdin:  strings.NewReader(stdin),
		stdout: &out,
		stderr: &errb,
		getenv: func(k string) string { return vars[k] },
	})
	return result{code, out.String(), errb.String()}
}

func catalogFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "catalog.json")
	if err := os.WriteFile(p, []byte(catalogDoc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const okBody = `{"success":true,"data":{"applied":{"tenants":1,"channels":2,"events":3}}}`

func TestApplyFilePutsDocumentWithToken(t *testing.T) {
	t.Parallel()
	srv, got := adminServer(t, 200, okBody)
	r := ticketctl(map[string]string{"TICKETD_URL": srv.URL + "/", "TICKETD_ADMIN_TOKEN": "s3cret"}, "",
		"apply", "-f", catalogFile(t))
	if r.code != 0 || r.stdout != "applied: 1 tenants, 2 channels, 3 events\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	reqs := got()
	want := received{"PUT", "/v1/admin/catalog", "Bearer s3cret", "application/json", catalogDoc, ""}
	if len(reqs) != 1 || reqs[0] != want {
		t.Fatalf("server saw %+v, want one %+v", reqs, want)
	}
}

func TestApplyStdinAndTokenFlag(t *testing.T) {
	t.Parallel()
	srv, got := adminServer(t, 200, okBody)
	r := ticketctl(map[string]string{"TICKETD_ADMIN_TOKEN": "from-env"}, catalogDoc,
		"apply", "-f", "-", "-token", "from-flag", "-url", srv.URL)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	reqs := got()
	if len(reqs) != 1 || reqs[0].auth != "Bearer from-flag" || reqs[0].body != catalogDoc {
		t.Fatalf("server saw %+v, want the stdin document with the flag's token", reqs)
	}
}

func TestApplyPrintsErrorEnvelope(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status      int
		body, wants string
	}{
		{400, `{"success":false,"code":"INVALID_CATALOG","message":"tenants[0].name: required","path":"tenants[0].name"}`,
			"INVALID_CATALOG (HTTP 400): tenants[0].name: required"},
		{401, `{"success":false,"code":"ADMIN_UNAUTHORIZED","message":"a valid Authorization: Bearer admin token is required"}`,
			"ADMIN_UNAUTHORIZED (HTTP 401): a valid Authorization"},
		{409, `{"success":false,"code":"CATALOG_BUSY","message":"another catalog apply is in progress; retry"}`,
			"CATALOG_BUSY (HTTP 409)"},
		// Not an envelope: a proxy's page is shown as it came.
		{502, "<html><body>Bad Gateway</body></html>", "502 Bad Gateway from "},
		{200, `{"success":true,"data":{}}`, "success without applied counts"},
	} {
		srv, _ := adminServer(t, tc.status, tc.body)
		r := ticketctl(map[string]string{"TICKETD_URL": srv.URL, "TICKETD_ADMIN_TOKEN": "t"}, catalogDoc, "apply", "-f", "-")
		if r.code != 1 || !strings.Contains(r.stderr, tc.wants) || r.stdout != "" {
			t.Errorf("HTTP %d: exit %d, stdout %q, stderr %q; want exit 1 and %q", tc.status, r.code, r.stdout, r.stderr, tc.wants)
		}
	}
}

func TestApplyUsageErrorsSendNothing(t *testing.T) {
	t.Parallel()
	srv, got := adminServer(t, 200, okBody)
	vars := map[string]string{"TICKETD_URL": srv.URL, "TICKETD_ADMIN_TOKEN": "t"}
	for _, tc := range []struct {
		name  string
		vars  map[string]string
		args  []string
		code  int
		wants string
	}{
		{"no file", vars, []string{"apply"}, 2, "-f catalog.json"},
		{"no token", map[string]string{"TICKETD_URL": srv.URL}, []string{"apply", "-f", "-"}, 2, "TICKETD_ADMIN_TOKEN"},
		{"stray argument", vars, []string{"apply", "-f", "-", "extra"}, 2, `unexpected argument "extra"`},
		{"unknown flag", vars, []string{"apply", "-x"}, 2, "-x"},
		{"missing file", vars, []string{"apply", "-f", filepath.Join(t.TempDir(), "nope.json")}, 1, "read catalog"},
		{"unknown command", vars, []string{"deploy"}, 2, `unknown command "deploy"`},
		{"no command", vars, nil, 2, "Usage:"},
	} {
		r := ticketctl(tc.vars, catalogDoc, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.wants) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", tc.name, r.code, r.stderr, tc.code, tc.wants)
		}
	}
	if n := len(got()); n != 0 {
		t.Fatalf("server got %d requests, want none", n)
	}
}

func TestApplyUnreachableServer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	r := ticketctl(map[string]string{"TICKETD_URL": url, "TICKETD_ADMIN_TOKEN": "t"}, catalogDoc, "apply", "-f", "-")
	if r.code != 1 || !strings.Contains(r.stderr, "ticketctl apply:") {
		t.Fatalf("exit %d, stderr %q; want exit 1 with the connection error", r.code, r.stderr)
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"help", "-h", "--help"} {
		r := ticketctl(nil, "", arg)
		if r.code != 0 || !strings.Contains(r.stdout, "ticketctl apply -f catalog.json") || r.stderr != "" {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q", arg, r.code, r.stdout, r.stderr)
		}
	}
}

// adminOff serves ticketd's router with the admin surface off (no
// TICKETD_ADMIN_TOKEN) on a port below the ephemeral range.
func adminOff(t *testing.T) string {
	t.Helper()
	addr, err := loopback.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Handler(nil, &admin.API{}), server.Logger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return "http://" + addr
}

// Issue 21: apply (and queue) against a ticketd started without
// TICKETD_ADMIN_TOKEN said only "NOT_FOUND (HTTP 404): no such endpoint".
// ticketd answers ADMIN_DISABLED, and ticketctl says what to do.
func TestAdminCallsToASurfaceThatIsOffSayWhatToDo(t *testing.T) {
	t.Parallel()
	base := adminOff(t)
	vars := map[string]string{"TICKETD_URL": base, "TICKETD_ADMIN_TOKEN": "t"}
	for _, args := range [][]string{{"apply", "-f", "-"}, {"queue", "ev_room"}, {"queue", "-audit", "ev_room"}} {
		r := ticketctl(vars, catalogDoc, args...)
		want := "ticketctl " + args[0] + ": ADMIN_DISABLED (HTTP 404): the admin surface is off: this ticketd was started without " +
			"TICKETD_ADMIN_TOKEN; restart it with TICKETD_ADMIN_TOKEN set, and send that token (ticketctl: TICKETD_ADMIN_TOKEN or -token)\n"
		if r.code != 1 || r.stderr != want || r.stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, r.code, r.stdout, r.stderr, want)
		}
	}
}

// The router's 404 (a ticketd older than ADMIN_DISABLED, or not a ticketd)
// and a wrong token each come with what to check.
func TestAdminFailuresCarryAHint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status      int
		body, wants string
	}{
		{404, `{"success":false,"code":"NOT_FOUND","message":"no such endpoint"}`,
			"NOT_FOUND (HTTP 404): no such endpoint; %s has no such admin endpoint: its admin surface is off (start ticketd with TICKETD_ADMIN_TOKEN)"},
		{401, `{"success":false,"code":"ADMIN_UNAUTHORIZED","message":"a valid Authorization: Bearer admin token is required"}`,
			"give ticketctl the TICKETD_ADMIN_TOKEN that the ticketd at %s was started with"},
	} {
		srv, _ := adminServer(t, tc.status, tc.body)
		want := fmt.Sprintf(tc.wants, srv.URL)
		for _, args := range [][]string{{"apply", "-f", "-"}, {"queue", "ev_room"}} {
			r := ticketctl(map[string]string{"TICKETD_URL": srv.URL, "TICKETD_ADMIN_TOKEN": "t"}, catalogDoc, args...)
			if r.code != 1 || !strings.Contains(r.stderr, want) {
				t.Errorf("%v, HTTP %d: exit %d, stderr %q; want exit 1 and %q", args, tc.status, r.code, r.stderr, want)
			}
		}
	}
}
