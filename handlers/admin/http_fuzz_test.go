package admin_test

import (
	"testing"

	"github.com/ticketd/ticketd/handlers/servertest"
)

// FuzzAdminCatalogHTTP PUTs fuzzed catalog documents through the whole
// stack (real Redis and Postgres), with the admin token (auth%2 == 0) or
// with the fuzzed headers alone: no answer may be a 5xx; a refused
// document is 400 INVALID_CATALOG naming where, every refusal the envelope
// with a code of the table. A document that passes is applied for real.
func FuzzAdminCatalogHTTP(f *testing.F) {
	s := servertest.Start(f, servertest.Options{LockoutPerIP: 1 << 40})
	f.Add(uint8(0), "", []byte(servertest.Catalog))
	f.Add(uint8(0), "", []byte(servertest.StorefrontCatalog))
	f.Add(uint8(0), "", []byte(`{"tenants":[{"id":"t1","name":"T","events":[{"id":"e","shortId":"e1","slug":"e","name":"E","startsAt":"2027-01-01T00:00:00Z","status":"on_sale","tickets":[{"id":"k","name":"K","price":12.345,"capacity":1}]}]}]}`))
	f.Add(uint8(1), "Authorization: Bearer wrong", []byte(`{}`))
	f.Add(uint8(1), "Authorization: "+servertest.AdminToken, []byte(`{}`))
	f.Fuzz(func(t *testing.T, auth uint8, headers string, body []byte) {
		req := servertest.FuzzRequest{Method: "PUT", Path: "/v1/admin/catalog", Body: body}
		if auth%2 == 0 {
			req.Headers = [][2]string{{"Authorization", "Bearer " + servertest.AdminToken}}
		}
		req.Headers = append(req.Headers, servertest.FuzzHeaders(headers)...)
		a, ok := s.Send(t, req)
		if ok && a.Status == 400 && a.Code != "INVALID_CATALOG" && auth%2 == 0 && len(headers) == 0 {
			t.Fatalf("a refused catalog answered %s, want INVALID_CATALOG: %s", a.Code, a.Body)
		}
	})
}
