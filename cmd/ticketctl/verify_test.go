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
