package main

import (
	"strings"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/inventory/tickets"
)

func signedTicket(secret string) (string, tickets.Ticket) {
	t := tickets.Ticket{ID: "o01abc.ev_fest-001", EventID: "ev_fest", Admission: "General Admission"}
	return tickets.NewKeys(secret).Sign(t), t
}

func TestVerifyValidTicketWithSecretsKey(t *testing.T) {
	t.Parallel()
	qr, tk := signedTicket("prod secret")
	r := ticketctl(map[string]string{"TICKETD_SECRETS_KEY": "prod secret"}, "", "verify", qr)
	if r.code != 0 || !strings.HasSuffix(r.stdout, "valid\n") || !strings.Contains(r.stdout, tk.ID) ||
		!strings.Contains(r.stdout, "ev_fest") || !strings.Contains(r.stdout, "General Admission") {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestVerifyWithPublicKeyAndJSON(t *testing.T) {
	t.Parallel()
	qr, tk := signedTicket("prod secret")
	pub := tickets.NewKeys("prod secret").PublicKey("ev_fest")
	// No secrets key needed; flags after the text work too.
	r := ticketctl(nil, "", "verify", qr, "-public-key", pub, "-json")
	var got verifyResult
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q (%v)", r.code, r.stdout, r.stderr, err)
	}
	if want := (verifyResult{Valid: true, TicketID: tk.ID, EventID: tk.EventID, Admission: tk.Admission}); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	// From stdin, as a scanner pipes it.
	if r := ticketctl(nil, qr+"\n", "verify", "-public-key", pub, "-"); r.code != 0 {
		t.Fatalf("stdin: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestVerifyRefusesTamperedAndForeignTickets(t *testing.T) {
	t.Parallel()
	qr, _ := signedTicket("prod secret")
	parts := strings.Split(qr, ".")
	parts[3] = "VklQ" // "VIP"
	tampered := strings.Join(parts, ".")
	vars := map[string]string{"TICKETD_SECRETS_KEY": "prod secret"}
	for name, c := range map[string]struct {
		vars map[string]string
		args []string
		why  string
	}{
		"tampered admission": {vars, []string{"verify", tampered}, "signature does not verify"},
		"another deployment": {map[string]string{"TICKETD_SECRETS_KEY": "other"}, []string{"verify", qr}, "signature does not verify"},
		"another event's key": {nil, []string{"verify", "-public-key", tickets.NewKeys("prod secret").PublicKey("ev_other"), qr},
			"signature does not verify"},
		"not for this door": {vars, []string{"verify", "-event", "ev_other", qr}, "not ev_other"},
		"not a ticket":      {vars, []string{"verify", "hello"}, "not a ticketd ticket code"},
	} {
		r := ticketctl(c.vars, "", c.args...)
		if r.code != 1 || !strings.HasPrefix(r.stdout, "invalid: ") || !strings.Contains(r.stdout, c.why) || strings.Contains(r.stdout, "valid\n") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 and %q", name, r.code, r.stdout, r.stderr, c.why)
		}
	}
	r := ticketctl(vars, "", "verify", "-json", tampered)
	var got verifyResult
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 1 || got.Valid || got.Error == "" || got.TicketID != "" {
		t.Fatalf("-json tampered: exit %d, %+v (%v)", r.code, got, err)
	}
}

func TestVerifyUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"verify"}, {"verify", "a", "b"}, {"verify", "-public-key", "short", "TD1.a.b.c.d"}} {
		if r := ticketctl(nil, "", args...); r.code != 2 {
			t.Errorf("%q: exit %d, want 2 (stderr %q)", args, r.code, r.stderr)
		}
	}
}

// The development key is in ticketd's source: a ticket signed with it
// verifies only when -dev asks for that key, and the output says so;
// without TICKETD_SECRETS_KEY, -public-key or -dev verify refuses to
// guess (exit 2) rather than print "valid" for a forgery.
func TestVerifyUsesTheDevelopmentKeyOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	forged, tk := signedTicket(tickets.DevelopmentSecretsKey)
	r := ticketctl(nil, "", "verify", forged)
	if r.code != 2 || strings.Contains(r.stdout, "valid") || !strings.Contains(r.stderr, "TICKETD_SECRETS_KEY") {
		t.Fatalf("no key: exit %d, stdout %q, stderr %q; want exit 2 naming TICKETD_SECRETS_KEY", r.code, r.stdout, r.stderr)
	}
	// The development key is trusted only beside a development ticketd:
	// in production (the default) neither -dev nor the key itself passes.
	for _, vars := range []map[string]string{nil, {"TICKETD_ENV": "production"}} {
		r = ticketctl(vars, "", "verify", "-dev", forged)
		if r.code != 2 || strings.Contains(r.stdout, "valid") || !strings.Contains(r.stderr, "TICKETD_ENV=development") {
			t.Fatalf("-dev with %v: exit %d, stdout %q, stderr %q; want exit 2 naming TICKETD_ENV=development", vars, r.code, r.stdout, r.stderr)
		}
	}
	r = ticketctl(map[string]string{"TICKETD_SECRETS_KEY": tickets.DevelopmentSecretsKey}, "", "verify", forged)
	if r.code != 2 || strings.Contains(r.stdout, "valid") || !strings.Contains(r.stderr, "TICKETD_ENV=development") {
		t.Fatalf("the development key as TICKETD_SECRETS_KEY in production: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	dev := map[string]string{"TICKETD_ENV": "development"}
	r = ticketctl(dev, "", "verify", "-dev", forged)
	if r.code != 0 || !strings.HasSuffix(r.stdout, "valid\n") || !strings.Contains(r.stdout, "development key") {
		t.Fatalf("-dev: exit %d, stdout %q; want valid, saying development key", r.code, r.stdout)
	}
	r = ticketctl(map[string]string{"TICKETD_SECRETS_KEY": "prod secret", "TICKETD_ENV": "development"}, "", "verify", forged, "-dev", "-json")
	var got verifyResult
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 {
		t.Fatalf("-dev -json: exit %d, stdout %q (%v)", r.code, r.stdout, err)
	}
	if want := (verifyResult{Valid: true, TicketID: tk.ID, EventID: tk.EventID, Admission: tk.Admission, Key: "development key"}); got != want {
		t.Fatalf("-dev -json: %+v, want %+v", got, want)
	}
	// With the deployment's key, the forgery is what it is.
	if r := ticketctl(map[string]string{"TICKETD_SECRETS_KEY": "prod secret"}, "", "verify", forged); r.code != 1 || strings.Contains(r.stdout, "development key") {
		t.Fatalf("prod key: exit %d, stdout %q; want invalid", r.code, r.stdout)
	}
	if r := ticketctl(dev, "", "verify", "-dev", "-public-key", tickets.NewKeys("x").PublicKey("ev_fest"), forged); r.code != 2 {
		t.Fatalf("-dev with -public-key: exit %d, want 2", r.code)
	}
}
