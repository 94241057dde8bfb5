package channel_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/handlers/servertest"
)

// TestPartnerErrorCodes hits every partner error code of interface.md (and
// the decisions.md ones) over HTTP, each with the envelope.
func TestPartnerErrorCodes(t *testing.T) {
	s := start(t, servertest.Options{})
	a := keyed("a")
	ga := "/v1/channel/events/ev_ga"
	long := strings.Repeat("x", 201)

	cases := []struct {
		name    string
		method  string
		path    string
		headers map[string]string
		body    any
		status  int
		code    string
	}{
		{"no credentials", "GET", "/v1/channel/events", nil, nil, 401, "MISSING_CREDENTIALS"},
		{"key without secret", "GET", "/v1/channel/events", map[string]string{"x-service-key": "ck_a"}, nil, 401, "MISSING_CREDENTIALS"},
		{"unknown key", "GET", "/v1/channel/events", keyed("zz"), nil, 401, "INVALID_CREDENTIALS"},
		{"wrong secret", "GET", "/v1/channel/events", map[string]string{"x-service-key": "ck_a", "x-service-secret": "nope"}, nil, 401, "INVALID_CREDENTIALS"},
		{"ip not allowlisted", "GET", "/v1/channel/events", keyed("ip"), nil, 403, "IP_NOT_ALLOWED"},
		{"a page size out of range", "GET", "/v1/channel/events?limit=0", a, nil, 400, "INVALID_REQUEST"},
		{"a cursor the list never gave", "GET", "/v1/channel/events?cursor=%25%25%25junk", a, nil, 400, "INVALID_REQUEST"},
		{"spoofed XFF is not believed", "GET", "/v1/channel/events", with(keyed("ip"), "X-Forwarded-For", "10.1.2.3"), nil, 403, "IP_NOT_ALLOWED"},
		{"scope denied", "POST", ga + "/checkout", with(keyed("scope"), "Idempotency-Key", "k1"), buyer(map[string]any{"selectedTicketId": "tk_a"}), 403, "SCOPE_DENIED"},
		{"unknown event", "GET", "/v1/channel/events/ev_nope", a, nil, 404, "EVENT_NOT_FOUND"},
		{"other channel's event", "GET", "/v1/channel/events/ev_other", a, nil, 404, "EVENT_NOT_FOUND"},
		{"draft event", "POST", "/v1/channel/events/ev_draft/quote", a, map[string]any{"selectedTicketId": "tk"}, 404, "EVENT_NOT_FOUND"},
		{"cancelled event", "POST", "/v1/channel/events/ev_cancelled/quote", a, map[string]any{"selectedTicketId": "tk"}, 403, "EVENT_CANCELLED"},
		{"embargoed event", "POST", "/v1/channel/events/ev_embargo/checkout", with(a, "Idempotency-Key", "k2"), buyer(map[string]any{"selectedTicketId": "tk"}), 403, "EVENT_NOT_AVAILABLE"},
		{"no buyer name", "POST", ga + "/checkout", with(a, "Idempotency-Key", "k3"), map[string]any{"buyerEmail": "a@b.co", "selectedTicketId": "tk_a"}, 400, "INVALID_BUYER_NAME"},
		{"long buyer name", "POST", ga + "/checkout", with(a, "Idempotency-Key", "k4"), map[string]any{"buyerName": long, "buyerEmail": "a@b.co", "selectedTicketId": "tk_a"}, 400, "INVALID_BUYER_NAME"},
		{"no buyer email", "POST", ga + "/checkout", with(a, "Idempotency-Key", "k5"), map[string]any{"buyerName": "A", "selectedTicketId": "tk_a"}, 400, "INVALID_BUYER_EMAIL"},
		{"bad buyer email", "POST", ga + "/checkout", with(a, "Idempotency-Key", "k6"), map[string]any{"buyerName": "A", "buyerEmail": "not-an-address", "selectedTicketId": "tk_a"}, 400, "INVALID_BUYER_EMAIL"},
		{"long buyer email", "POST", ga + "/checkout", with(a, "Idempotency-Key", "k7"), map[string]any{"buyerName": "A", "buyerEmail": long + "@b.co", "selectedTicketId": "tk_a"}, 400, "INVALID_BUYER_EMAIL"},
		{"long buyer phone", "POST", ga + "/checkout", with(a, "Idempotency-Key", "k8"), buyer(map[string]any{"buyerPhone": strings.Repeat("1", 33), "selectedTicketId": "tk_a"}), 400, "INVALID_BUYER_PHONE"},
		{"no idempotency key", "POST", ga + "/checkout", a, buyer(map[string]any{"selectedTicketId": "tk_a"}), 400, "IDEMPOTENCY_KEY_REQUIRED"},
		{"more than fits the ticket", "POST", ga + "/checkout", with(a, "Idempotency-Key", "k9"), buyer(map[string]any{"selectedTicketId": "tk_a", "quantity": 6}), 409, "TICKET_QUANTITY_EXCEEDS_CAPACITY"},
		{"more than fits the event", "POST", ga + "/checkout", with(a, "Idempotency-Key", "k10"), buyer(map[string]any{"tickets": []map[string]any{{"ticketId": "tk_a", "quantity": 5}, {"ticketId": "tk_b", "quantity": 6}}}), 409, "QUANTITY_EXCEEDS_CAPACITY"},
		{"hidden ticket without code", "POST", ga + "/quote", a, map[string]any{"selectedTicketId": "tk_hidden"}, 400, "TICKET_NOT_FOUND"},
		{"unpriced seat", "POST", "/v1/channel/events/ev_seated/quote", a, map[string]any{"seatLabels": []string{"B-1"}}, 400, "SEAT_NOT_PRICED"},
		{"showing required", "POST", "/v1/channel/events/ev_show/quote", a, map[string]any{"selectedTicketId": "tk"}, 400, "SHOWING_REQUIRED"},
		{"unknown discount code", "POST", ga + "/quote", a, map[string]any{"selectedTicketId": "tk_a", "discountCode": "NOPE"}, 400, "INVALID_DISCOUNT_CODE"},
		{"malformed JSON", "POST", ga + "/quote", a, "{not json", 400, "INVALID_REQUEST"},
		{"wrong JSON type", "POST", ga + "/quote", a, `{"quantity":"two","selectedTicketId":"tk_a"}`, 400, "INVALID_REQUEST"},
		{"confirm without order", "POST", "/v1/channel/orders/confirm", a, `{"amount":1,"partnerReference":"r"}`, 400, "INVALID_REQUEST"},
		{"confirm with string amount", "POST", "/v1/channel/orders/confirm", a, `{"orderId":"oabc.ev_ga","amount":"1.00","partnerReference":"r"}`, 400, "INVALID_REQUEST"},
		{"confirm with 3 decimals", "POST", "/v1/channel/orders/confirm", a, `{"orderId":"oabc.ev_ga","amount":1.005,"partnerReference":"r"}`, 400, "INVALID_REQUEST"},
		{"no signing key", "POST", "/v1/channel/orders/confirm", keyed("nosign"), `{"orderId":"oabc.ev_ga","amount":1,"partnerReference":"r"}`, 401, "SIGNING_KEY_NOT_CONFIGURED"},
		{"bad signature", "POST", "/v1/channel/orders/confirm", with(a, "x-service-signature", "00"), `{"orderId":"oabc.ev_ga","amount":1,"partnerReference":"r"}`, 401, "INVALID_SIGNATURE"},
		{"status of unknown order", "POST", "/v1/channel/orders/status", a, `{"orderId":"ozzzz.ev_ga"}`, 404, "NOT_FOUND"},
		{"status of a malformed order id", "POST", "/v1/channel/orders/status", a, `{"orderId":"o01zzzz"}`, 404, "NOT_FOUND"},
		{"status of an order id with a NUL", "POST", "/v1/channel/orders/status", a, `{"orderId":"oab\u0000.ev_ga"}`, 404, "NOT_FOUND"},
		{"confirm with a control character in the reference", "POST", "/v1/channel/orders/confirm", a, `{"orderId":"oabc.ev_ga","amount":1,"partnerReference":"r\u0000x"}`, 400, "INVALID_REQUEST"},
		{"status without order", "POST", "/v1/channel/orders/status", a, `{}`, 400, "INVALID_REQUEST"},
		{"payload too large", "POST", ga + "/quote", a, `{"x":"` + strings.Repeat("a", 70*1024) + `"}`, 413, "PAYLOAD_TOO_LARGE"},
		{"unknown route", "GET", "/v1/channel/nothing", a, nil, 404, "NOT_FOUND"},
		{"idempotency key of 5000 characters", "POST", ga + "/checkout", with(a, "Idempotency-Key", strings.Repeat("k", 5000)), buyer(map[string]any{"selectedTicketId": "tk_a"}), 400, "INVALID_IDEMPOTENCY_KEY"},
		{"headers over 8 KB", "GET", "/v1/channel/events", with(a, "X-Padding", strings.Repeat("p", 9000)), nil, 431, "HEADERS_TOO_LARGE"},
		{"session bearer forged", "GET", "/v1/channel/session", map[string]string{"Authorization": "Bearer abc.def"}, nil, 401, "INVALID_SESSION"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expect(t, s.Do(t, tc.method, tc.path, tc.headers, tc.body), tc.status, tc.code)
		})
	}

	t.Run("type errors name JSON types, not Go ones", func(t *testing.T) {
		r := s.Do(t, "POST", ga+"/quote", a, `{"tickets":{"ticketId":"tk_a"}}`)
		expect(t, r, 400, "INVALID_REQUEST")
		if !strings.Contains(r.Message, "field tickets must be an array") {
			t.Fatalf("message: %q", r.Message)
		}
		r = s.Do(t, "POST", ga+"/quote", a, `[1]`)
		if !strings.Contains(r.Message, "expected an object") {
			t.Fatalf("message: %q", r.Message)
		}
	})
	t.Run("the operator's catalog may be larger than 64 KB", func(t *testing.T) {
		s.Apply(t, []byte(testCatalog+strings.Repeat(" ", 100<<10)))
	})
	t.Run("confirm of another channel's order", func(t *testing.T) {
		o := mustReserve(t, s, "a", "ev_ga", map[string]any{"selectedTicketId": "tk_b"})
		expect(t, confirm(t, s, "slow", o.OrderID, o.Amount, "r1"), 404, "NOT_FOUND")
	})
	t.Run("signed confirm of a malformed order id", func(t *testing.T) {
		h := with(a, "x-service-signature", sig("sk_a", "oab\x00.ev_ga", 100, "r1"))
		r := s.Do(t, "POST", "/v1/channel/orders/confirm", h, `{"orderId":"oab\u0000.ev_ga","amount":1.00,"partnerReference":"r1"}`)
		expect(t, r, 404, "NOT_FOUND")
	})
	t.Run("not partner remit", func(t *testing.T) {
		o := mustReserve(t, s, "invoice", "ev_ga", map[string]any{"selectedTicketId": "tk_b"})
		expect(t, confirm(t, s, "invoice", o.OrderID, o.Amount, "r1"), 403, "NOT_PARTNER_REMIT")
	})
	t.Run("amount mismatch carries serverTotal", func(t *testing.T) {
		o := mustReserve(t, s, "a", "ev_ga", map[string]any{"selectedTicketId": "tk_b"})
		r := confirm(t, s, "a", o.OrderID, o.Amount+2, "r1")
		expect(t, r, 409, "AMOUNT_MISMATCH")
		if fmt.Sprint(r.Raw["serverTotal"]) != fmt.Sprint(float64(o.Amount)/100) {
			t.Fatalf("serverTotal %v, want %s", r.Raw["serverTotal"], o.Amount)
		}
		// Within the 0.01 tolerance it confirms.
		expect(t, confirm(t, s, "a", o.OrderID, o.Amount+1, "r1"), 200, "")
	})
	t.Run("key reused for another request", func(t *testing.T) {
		h := with(a, "Idempotency-Key", "reuse-1")
		expect(t, s.Do(t, "POST", ga+"/checkout", h, buyer(map[string]any{"selectedTicketId": "tk_b"})), 200, "")
		expect(t, s.Do(t, "POST", ga+"/checkout", h, buyer(map[string]any{"selectedTicketId": "tk_b", "quantity": 2})), 409, "KEY_CONFLICT")
		// The same cart written differently is the same request.
		same := s.Do(t, "POST", ga+"/checkout", h, buyer(map[string]any{"tickets": []map[string]any{{"ticketId": "tk_b", "quantity": 1}}}))
		expect(t, same, 200, "")
		if !strings.Contains(string(same.Data), `"duplicate":true`) {
			t.Fatalf("the same cart spelt another way was not a replay: %s", same)
		}
		// The same key by another caller is a conflict too.
		expect(t, s.Do(t, "POST", ga+"/checkout", with(keyed("slow"), "Idempotency-Key", "reuse-1"), buyer(map[string]any{"selectedTicketId": "tk_b"})), 409, "KEY_CONFLICT")
	})
	t.Run("duplicate in progress", func(t *testing.T) {
		h := with(a, "Idempotency-Key", "inflight-1")
		body := buyer(map[string]any{"selectedTicketId": "tk_b"})
		first := s.Do(t, "POST", ga+"/checkout", h, body)
		expect(t, first, 200, "")
		// Make the record look like an attempt that claimed the key and has
		// not created its order yet.
		ctx := context.Background()
		k := s.Space.Idempotency("inflight-1")
		rec, err := s.Redis.Do(ctx, s.Redis.B().Get().Key(k).Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		claimed := rec[:strings.LastIndexByte(rec, '\x1f')+1] + "onotyetcreated.ev_ga"
		if err := s.Redis.Do(ctx, s.Redis.B().Set().Key(k).Value(claimed).Keepttl().Build()).Error(); err != nil {
			t.Fatal(err)
		}
		expect(t, s.Do(t, "POST", ga+"/checkout", h, body), 409, "DUPLICATE_IN_PROGRESS")
		// Once the claim is older than the in-progress window (30 s), a
		// retry takes the dead attempt over and creates its order.
		if err := s.Redis.Do(ctx, s.Redis.B().Pexpire().Key(k).Milliseconds(int64((24*time.Hour-31*time.Second)/time.Millisecond)).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		taken := s.Do(t, "POST", ga+"/checkout", h, body)
		expect(t, taken, 200, "")
		if !strings.Contains(string(taken.Data), `"orderId":"onotyetcreated.ev_ga"`) || strings.Contains(string(taken.Data), "duplicate") {
			t.Fatalf("takeover: %s", taken)
		}
	})
	t.Run("confirm failed after sell-out", func(t *testing.T) {
		// tk_hidden has 5: both orders reserve, the second cannot claim.
		o1 := mustReserve(t, s, "a", "ev_ga", map[string]any{"selectedTicketId": "tk_hidden", "accessCode": "SECRET", "quantity": 5})
		o2 := mustReserve(t, s, "a", "ev_ga", map[string]any{"selectedTicketId": "tk_hidden", "accessCode": "SECRET", "quantity": 1})
		expect(t, confirm(t, s, "a", o1.OrderID, o1.Amount, "p1"), 200, "")
		r := confirm(t, s, "a", o2.OrderID, o2.Amount, "p2")
		expect(t, r, 409, "CONFIRM_FAILED")
		if r.Raw["refundRequired"] != true || r.Raw["reason"] != "sold_out" {
			t.Fatalf("CONFIRM_FAILED without refundRequired: %s", r)
		}
		// A retry gives the same reason.
		if again := confirm(t, s, "a", o2.OrderID, o2.Amount, "p2"); again.Raw["reason"] != "sold_out" {
			t.Fatalf("retried CONFIRM_FAILED: %s", again)
		}
		st := s.Do(t, "POST", "/v1/channel/orders/status", a, map[string]any{"orderId": o2.OrderID})
		if !strings.Contains(string(st.Data), `"failed"`) {
			t.Fatalf("status after CONFIRM_FAILED: %s", st)
		}
		// Now the ticket type is sold out at reserve.
		expect(t, reserve(t, s, "a", "ev_ga", map[string]any{"selectedTicketId": "tk_hidden", "accessCode": "SECRET"}), 409, "TICKET_SOLD_OUT")
	})
	t.Run("showing sold out", func(t *testing.T) {
		o := mustReserve(t, s, "a", "ev_show", map[string]any{"selectedTicketId": "tk", "quantity": 2, "showingId": "sh_1"})
		expect(t, confirm(t, s, "a", o.OrderID, o.Amount, "p"), 200, "")
		expect(t, reserve(t, s, "a", "ev_show", map[string]any{"selectedTicketId": "tk", "showingId": "sh_1"}), 409, "EVENT_SOLD_OUT")
		// The other showing still sells.
		mustReserve(t, s, "a", "ev_show", map[string]any{"selectedTicketId": "tk", "showingId": "sh_2"})
	})
	t.Run("a used-up code fails at quote as at reserve", func(t *testing.T) {
		cart := map[string]any{"selectedTicketId": "tk_b", "discountCode": "ONCE"}
		expect(t, s.Do(t, "POST", ga+"/quote", a, cart), 200, "")
		mustReserve(t, s, "a", "ev_ga", cart) // holds the one use while pending
		expect(t, s.Do(t, "POST", ga+"/quote", a, cart), 400, "INVALID_DISCOUNT_CODE")
		expect(t, reserve(t, s, "a", "ev_ga", cart), 400, "INVALID_DISCOUNT_CODE")
		// The holds expire with their orders: nothing stays forever.
		ttl, err := s.Redis.Do(context.Background(), s.Redis.B().Pttl().Key(s.Space.DiscountHolds("ev_ga")).Build()).AsInt64()
		if err != nil || ttl <= 0 {
			t.Fatalf("discount holds PTTL = %d, %v; want a TTL", ttl, err)
		}
	})
	t.Run("a session has no more scopes than its channel", func(t *testing.T) {
		sess := session(t, s, "sess", "Scoped")
		expect(t, s.Do(t, "GET", "/v1/channel/events/ev_ga", sess, nil), 200, "")
		expect(t, s.Do(t, "POST", ga+"/checkout", with(sess, "Idempotency-Key", "scoped-1"), map[string]any{"selectedTicketId": "tk_b"}), 403, "SCOPE_DENIED")
		expect(t, s.Do(t, "POST", "/v1/channel/orders/status", sess, map[string]any{"orderId": "oabc.ev_ga"}), 403, "SCOPE_DENIED")
		expect(t, s.Do(t, "POST", "/v1/channel/seating/events/ev_seated/hold", sess, map[string]any{"seatLabels": []string{"A-9"}}), 403, "SCOPE_DENIED")
	})
	t.Run("keyed seating calls share the catalog budget", func(t *testing.T) {
		low := keyed("low")
		expect(t, s.Do(t, "GET", "/v1/channel/events/ev_seated", low, nil), 200, "")
		expect(t, s.Do(t, "GET", "/v1/channel/seating/events/ev_seated/config", low, nil), 200, "")
		expect(t, s.Do(t, "GET", "/v1/channel/seating/events/ev_seated/availability", low, nil), 429, "RATE_LIMITED")
		expect(t, s.Do(t, "GET", "/v1/channel/events", low, nil), 429, "RATE_LIMITED")
	})
	t.Run("rate limited with Retry-After", func(t *testing.T) {
		var last *servertest.Response
		for i := 0; i < 3; i++ {
			last = s.Do(t, "POST", ga+"/checkout", with(keyed("slow"), "Idempotency-Key", fmt.Sprintf("rl-%d", i)), buyer(map[string]any{"selectedTicketId": "tk_b"}))
		}
		expect(t, last, 429, "RATE_LIMITED")
		if last.Header.Get("Retry-After") == "" {
			t.Fatalf("429 without Retry-After: %v", last.Header)
		}
	})
}

// A reserve that would take a discount use (or seats) claims its
// Idempotency-Key in the rate limit's round trip: refused, it gives the key
// back and takes nothing, so the same request after Retry-After is a new
// attempt rather than "in progress", and the code's one use stays free.
func TestRateLimitedReserveGivesItsKeyBack(t *testing.T) {
	s := start(t, servertest.Options{})
	ga := "/v1/channel/events/ev_ga"
	for range 2 {
		mustReserve(t, s, "slow", "ev_ga", map[string]any{"selectedTicketId": "tk_b"})
	}
	cart := buyer(map[string]any{"selectedTicketId": "tk_b", "discountCode": "ONCE"})
	r := s.Do(t, "POST", ga+"/checkout", with(keyed("slow"), "Idempotency-Key", "limited-1"), cart)
	expect(t, r, 429, "RATE_LIMITED")
	if r.Header.Get("Retry-After") == "" {
		t.Fatalf("429 without Retry-After: %v", r.Header)
	}
	n, err := s.Redis.Do(context.Background(), s.Redis.B().Exists().Key(s.Space.Idempotency("limited-1")).Build()).AsInt64()
	if err != nil || n != 0 {
		t.Fatalf("the refused reserve's key is still claimed (EXISTS = %d, %v)", n, err)
	}
	// The code's one use was not taken: another channel reserves with it.
	mustReserve(t, s, "a", "ev_ga", map[string]any{"selectedTicketId": "tk_b", "discountCode": "ONCE"})
}
