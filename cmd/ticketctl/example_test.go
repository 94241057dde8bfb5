package main

import (
	"os"
	"strings"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/handlers/channel"
	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/money"
)

// exampleCatalog is the document the README's Provisioning section applies.
const exampleCatalog = "../../catalog.example.json"

// TestApplyExampleCatalog runs the README's `ticketctl apply -f
// catalog.example.json` against a ticketd: the document is accepted, its
// channel sells both of its events from loopback, and applying it again
// resets nothing sold.
func TestApplyExampleCatalog(t *testing.T) {
	raw, err := os.ReadFile(exampleCatalog)
	if err != nil {
		t.Fatal(err)
	}
	var doc catalog.Document
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc.Channels) != 1 || len(doc.Tenants) != 1 {
		t.Fatalf("catalog.example.json: want one tenant and one channel: %v", err)
	}
	ch := doc.Channels[0]

	s := servertest.Start(t, servertest.Options{})
	vars := map[string]string{"TICKETD_URL": s.URL, "TICKETD_ADMIN_TOKEN": servertest.AdminToken}
	const applied = "applied: 1 tenants, 1 channels, 2 events\n" // as the README shows
	if r := ticketctl(vars, "", "apply", "-f", exampleCatalog); r.code != 0 || r.stdout != applied {
		t.Fatalf("apply: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	keyed := map[string]string{"x-service-key": ch.Key, "x-service-secret": ch.Secret}
	r := s.Do(t, "GET", "/v1/channel/events", keyed, nil)
	var list struct {
		Events []struct {
			ID     string `json:"id"`
			Seated bool   `json:"seated"`
		} `json:"events"`
	}
	r.Decode(t, &list)
	var ga, seated string
	for _, e := range list.Events {
		if e.Seated {
			seated = e.ID
		} else {
			ga = e.ID
		}
	}
	if r.Status != 200 || len(list.Events) != 2 || ga == "" || seated == "" {
		t.Fatalf("the example channel's catalog: want a GA and a seated event: %s", r)
	}

	// One ticket of the GA event's first type, reserved and confirmed.
	tk := doc.Tenants[0].Events[0].Tickets[0].ID
	res := s.Do(t, "POST", "/v1/channel/events/"+ga+"/checkout", servertest.With(keyed, "Idempotency-Key", servertest.NewKey()),
		servertest.Buyer(map[string]any{"selectedTicketId": tk, "quantity": 1}))
	var order struct {
		OrderID string      `json:"orderId"`
		Amount  money.Cents `json:"amount"`
	}
	if res.Status != 200 {
		t.Fatalf("reserve: %s", res)
	}
	res.Decode(t, &order)
	sig := channel.Signature(ch.SigningKey, order.OrderID, order.Amount, "psp-example-1")
	c := s.Do(t, "POST", "/v1/channel/orders/confirm", servertest.With(keyed, "x-service-signature", sig),
		map[string]any{"orderId": order.OrderID, "amount": order.Amount, "partnerReference": "psp-example-1"})
	if c.Status != 200 || !strings.Contains(string(c.Body), `"status":"paid"`) {
		t.Fatalf("confirm: %s", c)
	}
	if r := s.Do(t, "GET", "/v1/channel/seating/events/"+seated+"/availability", keyed, nil); r.Status != 200 {
		t.Fatalf("seated event's availability: %s", r)
	}

	// Applied again: same answer, and the sold ticket stays sold.
	if r := ticketctl(vars, "", "apply", "-f", exampleCatalog); r.code != 0 || r.stdout != applied {
		t.Fatalf("second apply: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	d := s.Do(t, "GET", "/v1/channel/events/"+ga, keyed, nil)
	var detail struct {
		Tickets []struct {
			ID        string `json:"id"`
			Remaining int64  `json:"remaining"`
		} `json:"tickets"`
	}
	d.Decode(t, &detail)
	capacity := doc.Tenants[0].Events[0].Tickets[0].Capacity
	remaining := int64(-1)
	for _, x := range detail.Tickets {
		if x.ID == tk {
			remaining = x.Remaining
		}
	}
	if remaining != capacity-1 {
		t.Fatalf("%s remaining %d after the second apply, want %d: %s", tk, remaining, capacity-1, d)
	}
}
