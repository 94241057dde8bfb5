package pages_test

import (
	"testing"

	"github.com/ticketd/ticketd/handlers/servertest"
)

// pageRoutes are the hosted payment pages (form posts) and the ticket
// pages: {id} is the session or order id, {img} the ticket image (the
// fuzzed id after '|').
var pageRoutes = []string{
	"GET /pay/card/{id}",
	"POST /pay/card/{id}/pay",
	"POST /pay/card/{id}/cancel",
	"GET /pay/wallet/{id}",
	"POST /pay/wallet/{id}/pay",
	"POST /pay/wallet/{id}/cancel",
	"GET /tickets/{id}",
	"GET /tickets/{id}/{img}",
}

// FuzzPagesHTTP sends fuzzed requests to the hosted payment pages and the
// ticket pages through the whole stack: the path's session or order id,
// the query (the ticket page's k=), headers and the urlencoded form a
// buyer posts. These routes answer HTML: no answer may be a 5xx, and one
// that is JSON must be the envelope with a code of the table.
func FuzzPagesHTTP(f *testing.F) {
	s := servertest.StartStorefront(f, servertest.Options{})
	vars := map[string]string{}
	for _, p := range []struct{ name, path, amountField string }{
		{"CS", "/card/create-checkout-session", "selectedTicketAmount"},
		{"WP", "/wallet/create-payment", "amount"},
	} {
		reg := s.MustRegister(f, servertest.Guest("sf_ga", map[string]any{"selectedTicketId": "tk_adult", "quantity": 1}))
		amount := reg.Total
		if p.amountField == "selectedTicketAmount" {
			amount = 2500
		}
		r := s.Front(f, "POST", p.path, map[string]any{"eventId": "sf_ga", "registrationId": reg.RegistrationID,
			"selectedTicketId": "tk_adult", "quantity": 1, p.amountField: amount,
			"successUrl": "https://shop.example.com/thanks", "cancelUrl": "https://shop.example.com/cart"})
		var out struct {
			SessionID string `json:"sessionId"`
		}
		if r.Status != 200 {
			f.Fatalf("%s: %s", p.path, r)
		}
		r.Decode(f, &out)
		vars[p.name] = out.SessionID
	}
	ord := s.MustReserve(f, "front", "sf_ga", map[string]any{"selectedTicketId": "tk_child", "quantity": 2})
	if r := s.Confirm(f, "front", ord.OrderID, ord.Amount, "ref-fuzz"); r.Status != 200 {
		f.Fatalf("confirm: %s", r)
	}
	s.Drain(f)
	vars["ORDER"], vars["K"] = ord.OrderID, s.Tickets.PageMAC(ord.OrderID)

	for i, seed := range []struct{ id, query, form string }{
		{"$CS", "", ""},
		{"$CS", "", "card=4000000000000002"},
		{"$CS", "", ""},
		{"$WP", "", ""},
		{"$WP", "", "card=4242424242424242"},
		{"$WP", "", ""},
		{"$ORDER", "k=$K", ""},
		{"$ORDER|1.png", "k=$K", ""},
	} {
		f.Add(uint8(i), seed.id, seed.query, "", []byte(seed.form))
	}
	f.Add(uint8(1), "$CS", "", "", []byte("card=4242424242424242"))
	f.Add(uint8(1), "$CS", "", "", []byte("card=4242%00&card=1"))
	f.Add(uint8(7), "$ORDER|9.png", "k=$K", "", []byte(nil))
	f.Add(uint8(6), "$ORDER", "k=", "", []byte(nil))

	f.Fuzz(func(t *testing.T, route uint8, id, query, headers string, form []byte) {
		method, _, path := servertest.FuzzTarget(pageRoutes, route, servertest.Subst(id, vars), servertest.Subst(query, vars), "")
		req := servertest.FuzzRequest{Method: method, Path: path, HTML: true,
			Headers: [][2]string{{"X-Forwarded-For", servertest.FuzzClientIP()}}}
		if method == "POST" {
			req.Body = []byte(servertest.Subst(string(form), vars))
			req.Headers = append(req.Headers, [2]string{"Content-Type", "application/x-www-form-urlencoded"})
		}
		req.Headers = append(req.Headers, servertest.FuzzHeaders(headers)...)
		s.Send(t, req)
	})
}
