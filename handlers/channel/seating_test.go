package channel_test

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/seats"
)

func session(t *testing.T, s *servertest.Server, ch, name string) map[string]string {
	t.Helper()
	r := s.Do(t, "POST", "/v1/channel/session", keyed(ch), map[string]any{"buyerName": name, "buyerEmail": strings.ToLower(name) + "@example.com"})
	expect(t, r, 200, "")
	var out struct{ SessionToken string }
	r.Decode(t, &out)
	if !strings.Contains(r.Header.Get("Set-Cookie"), "svc_session=") || !strings.Contains(strings.ToLower(r.Header.Get("Set-Cookie")), "httponly") {
		t.Fatalf("session cookie: %q", r.Header.Get("Set-Cookie"))
	}
	return map[string]string{"Authorization": "Bearer " + out.SessionToken}
}

// TestSessionReplacesBuyer: inside a session the body's buyer fields are
// ignored and the session's buyer is the order's.
func TestSessionReplacesBuyer(t *testing.T) {
	s := start(t, servertest.Options{})
	sess := session(t, s, "a", "Grace")
	r := s.Do(t, "POST", "/v1/channel/events/ev_ga/checkout", with(sess, "Idempotency-Key", "sess-1"),
		map[string]any{"buyerName": "Mallory", "buyerEmail": "mallory@evil.example", "selectedTicketId": "tk_b"})
	expect(t, r, 200, "")
	var o reserved
	r.Decode(t, &o)
	expect(t, confirm(t, s, "a", o.OrderID, o.Amount, "p"), 200, "")
	s.Drain(t)
	if n := s.Count(t, `SELECT count(*) FROM orders WHERE id = $1 AND buyer_email = 'grace@example.com' AND buyer_name = 'Grace'`, o.OrderID); n != 1 {
		t.Fatal("the order's buyer is not the session's")
	}
	// The session sees its own order's status, and resolves.
	expect(t, s.Do(t, "POST", "/v1/channel/orders/status", sess, map[string]any{"orderId": o.OrderID}), 200, "")
	expect(t, s.Do(t, "GET", "/v1/channel/session", sess, nil), 200, "")
	// Another session of the same channel does not.
	other := session(t, s, "a", "Eve")
	expect(t, s.Do(t, "POST", "/v1/channel/orders/status", other, map[string]any{"orderId": o.OrderID}), 404, "NOT_FOUND")
	// A session cannot confirm (server-to-server only).
	expect(t, s.Do(t, "POST", "/v1/channel/orders/confirm", other, map[string]any{"orderId": o.OrderID}), 401, "MISSING_CREDENTIALS")
}

// TestSeatConflictAndHoldExpired covers SEAT_CONFLICT naming the seats and
// reason hold_expired on the partner surface.
func TestSeatConflictAndHoldExpired(t *testing.T) {
	// Long enough for the calls below to run within it on a loaded
	// machine (at 400 ms a slow moment let the hold lapse before the
	// conflict was asked for); its end is waited for, not slept through.
	s := start(t, servertest.Options{SeatHoldTTL: 2 * time.Second})
	base := "/v1/channel/seating/events/ev_seated"
	s1, s2 := session(t, s, "a", "One"), session(t, s, "a", "Two")
	expect(t, s.Do(t, "POST", base+"/hold", s1, map[string]any{"seatLabels": []string{"A-1", "A-2"}}), 200, "")
	r := s.Do(t, "POST", base+"/hold", s2, map[string]any{"seatLabels": []string{"A-2", "A-3"}})
	expect(t, r, 409, "SEAT_CONFLICT")
	if !strings.Contains(string(r.Data), `"A-2"`) || strings.Contains(string(r.Data), `"A-3"`) {
		t.Fatalf("conflicts should name exactly A-2: %s", r.Data)
	}
	// Reserving a seat someone else holds is a conflict too.
	expect(t, s.Do(t, "POST", "/v1/channel/events/ev_seated/checkout", with(s2, "Idempotency-Key", "c-1"),
		map[string]any{"seatLabels": []string{"A-1"}}), 409, "SEAT_CONFLICT")
	// After the hold times out, reserving it reports hold_expired.
	waitFor(t, func() bool {
		var av struct{ Held []string }
		s.Do(t, "GET", base+"/availability", keyed("a"), nil).Decode(t, &av)
		return !slices.Contains(av.Held, "A-1")
	})
	r = s.Do(t, "POST", "/v1/channel/events/ev_seated/checkout", with(s1, "Idempotency-Key", "c-2"),
		map[string]any{"seatLabels": []string{"A-1"}})
	if r.Status != 409 || r.Reason != "hold_expired" {
		t.Fatalf("want 409 reason hold_expired, got %s", r)
	}
	// A keyed partner holds with a token it names in the reserve.
	tr := s.Do(t, "POST", base+"/hold-token", keyed("a"), nil)
	expect(t, tr, 200, "")
	var tok struct{ HoldToken string }
	tr.Decode(t, &tok)
	expect(t, s.Do(t, "POST", base+"/hold", keyed("a"), map[string]any{"holdToken": tok.HoldToken, "seatLabels": []string{"A-5"}}), 200, "")
	o := mustReserve(t, s, "a", "ev_seated", map[string]any{"seatLabels": []string{"A-5"}, "seatHoldToken": tok.HoldToken})
	if o.Amount != 4200 { // 40.00 + 2.00 fee
		t.Fatalf("seat order amount %s", o.Amount)
	}
	expect(t, confirm(t, s, "a", o.OrderID, o.Amount, "p"), 200, "")
	av := s.Do(t, "GET", base+"/availability", keyed("a"), nil)
	if !strings.Contains(string(av.Data), `"booked":["A-5"]`) {
		t.Fatalf("availability after booking: %s", av.Data)
	}
	// A booked seat is never held again.
	expect(t, s.Do(t, "POST", base+"/hold", s2, map[string]any{"seatLabels": []string{"A-5"}}), 409, "SEAT_CONFLICT")
}

// TestSeatRush: 200 buyer sessions race to hold and buy 20 seats. Each seat
// is sold at most once, abandoned holds expire and free their seats, and no
// hold or seat key is left once all holds are gone.
func TestSeatRush(t *testing.T) {
	s := servertest.Start(t, servertest.Options{SeatHoldTTL: time.Second})
	s.Apply(t, []byte(seatRushCatalog))
	base := "/v1/channel/seating/events/ev_rush"
	var wg sync.WaitGroup
	var mu sync.Mutex
	sold := map[string]string{} // seat -> order
	paid := 0
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			rnd := rand.New(rand.NewSource(int64(i)))
			r := s.Do(t, "POST", "/v1/channel/session", keyed("hot"), map[string]any{"buyerName": fmt.Sprint("B", i), "buyerEmail": fmt.Sprintf("b%d@example.com", i)})
			var tok struct{ SessionToken string }
			r.Decode(t, &tok)
			sess := map[string]string{"Authorization": "Bearer " + tok.SessionToken}
			want := []string{fmt.Sprintf("A-%d", 1+rnd.Intn(20))}
			if rnd.Intn(2) == 0 {
				want = append(want, fmt.Sprintf("A-%d", 1+rnd.Intn(20)))
			}
			h := s.Do(t, "POST", base+"/hold", sess, map[string]any{"seatLabels": want})
			if h.Status != 200 {
				if h.Code != "SEAT_CONFLICT" {
					t.Errorf("hold: %s", h)
				}
				return
			}
			if i%3 == 0 {
				return // abandons the hold
			}
			rr := s.Do(t, "POST", "/v1/channel/events/ev_rush/checkout", with(sess, "Idempotency-Key", fmt.Sprint("rush-", i)), map[string]any{"seatLabels": want})
			if rr.Status != 200 {
				t.Errorf("reserve of held seats: %s", rr)
				return
			}
			var o reserved
			rr.Decode(t, &o)
			c := s.Do(t, "POST", "/v1/channel/orders/confirm", with(keyed("hot"), "x-service-signature", sig("sk_hot", o.OrderID, o.Amount, "p")),
				fmt.Sprintf(`{"orderId":%q,"amount":%s,"partnerReference":"p"}`, o.OrderID, o.Amount))
			if c.Status != 200 {
				t.Errorf("confirm of held seats: %s", c)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			paid++
			for _, seat := range want {
				if prev, dup := sold[seat]; dup && prev != o.OrderID {
					t.Errorf("seat %s sold twice (%s, %s)", seat, prev, o.OrderID)
				}
				sold[seat] = o.OrderID
			}
		}(i)
	}
	wg.Wait()
	if paid == 0 {
		t.Fatal("no buyer got a seat")
	}
	booked, err := s.Redis.Do(context.Background(), s.Redis.B().Hgetall().Key(s.Space.Booked("ev_rush")).Build()).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	if len(booked) != len(sold) {
		t.Fatalf("Redis booked %d seats, buyers were told %d", len(booked), len(sold))
	}
	s.Drain(t)
	if n := s.Count(t, `SELECT count(*) FROM tickets WHERE event_id = 'ev_rush'`); n != len(sold) {
		t.Fatalf("Postgres has %d tickets, want %d", n, len(sold))
	}
	if n := s.Count(t, `SELECT count(*) FROM (SELECT label FROM tickets WHERE event_id = 'ev_rush' GROUP BY label HAVING count(*) > 1) d`); n != 0 {
		t.Fatalf("%d seat labels issued twice", n)
	}
	// Abandoned holds expire: every seat not booked is free again, and no
	// hold or seat holds key remains.
	waitFor(t, func() bool {
		for _, k := range redisKeys(t, s) {
			if strings.HasSuffix(k, "seats") || strings.Contains(k, ":hold:") { // :seats, :ordseats, :regseats
				return false
			}
		}
		return true
	})
	av := s.Do(t, "GET", base+"/availability", keyed("hot"), nil)
	if !strings.Contains(string(av.Data), `"held":[]`) {
		t.Fatalf("seats still held after expiry: %s", av.Data)
	}
	free := 0
	for i := 1; i <= 20; i++ {
		if _, ok := booked[fmt.Sprintf("A-%d", i)]; !ok {
			free++
		}
	}
	if free > 0 {
		sess := session(t, s, "hot", "Late")
		var seat string
		for i := 1; i <= 20; i++ {
			if _, ok := booked[fmt.Sprintf("A-%d", i)]; !ok {
				seat = fmt.Sprintf("A-%d", i)
				break
			}
		}
		expect(t, s.Do(t, "POST", base+"/hold", sess, map[string]any{"seatLabels": []string{seat}}), 200, "")
	}
}

const seatRushCatalog = `{
 "tenants": [{"id": "t_rush", "name": "Rush", "notifyEmail": "", "publishableKeys": [],
  "events": [{"id": "ev_rush", "shortId": "rush", "slug": "rush", "name": "Rush", "startsAt": "2027-01-01T00:00:00Z",
   "status": "on_sale", "storefront": false, "channels": ["ch_hot"], "tickets": [],
   "seatMap": {"categories": [{"id": "c", "name": "C", "price": 30}], "rows": [{"label": "A", "seats": 20, "category": "c"}]}}]}],
 "channels": [{"id": "ch_hot", "name": "Hot", "key": "ck_hot", "secret": "cs_hot_secret", "signingKey": "sk_hot",
  "scopes": ["catalog:read", "orders:write", "orders:confirm", "orders:read", "sessions:write"],
  "ipAllowlist": ["127.0.0.1/32", "::1/128"], "settlement": "partner_remit",
  "rateLimits": {"checkout": 100000, "confirm": 100000, "status": 100000, "session": 100000, "catalog": 100000}}]}`

// TestHoldReadOnThePartnerSurface: a buyer session reads its own hold back;
// naming another session's token is INVALID_HOLD_TOKEN, a gone token
// HOLD_EXPIRED.
func TestHoldReadOnThePartnerSurface(t *testing.T) {
	s := start(t, servertest.Options{})
	base := "/v1/channel/seating/events/ev_seated"
	s1, s2 := session(t, s, "a", "One"), session(t, s, "a", "Two")
	hr := s.Do(t, "POST", base+"/hold", s1, map[string]any{"seatLabels": []string{"A-3", "A-1"}})
	expect(t, hr, 200, "")
	var h struct {
		HoldToken  string
		SeatLabels []string
		Subtotal   float64
	}
	hr.Decode(t, &h)
	r := s.Do(t, "GET", base+"/hold/"+h.HoldToken, s1, nil)
	expect(t, r, 200, "")
	var got struct {
		HoldToken  string
		SeatLabels []string
		Subtotal   float64
		ExpiresAt  string
	}
	r.Decode(t, &got)
	if got.HoldToken != h.HoldToken || strings.Join(got.SeatLabels, ",") != "A-1,A-3" || got.Subtotal != h.Subtotal || got.ExpiresAt == "" {
		t.Fatalf("hold read %+v, want A-1,A-3 of %+v", got, h)
	}
	expect(t, s.Do(t, "GET", base+"/hold/"+h.HoldToken, s2, nil), 400, "INVALID_HOLD_TOKEN")
	expect(t, s.Do(t, "GET", base+"/hold/"+seats.NewToken(), keyed("a"), nil), 409, "HOLD_EXPIRED")
}

// TestIdempotentSeatedReserveUnderConcurrency: 20 simultaneous reserves of
// held seats with one key create one order, and none is told the seats are
// not held (a replay racing its first request takes nothing).
func TestIdempotentSeatedReserveUnderConcurrency(t *testing.T) {
	s := start(t, servertest.Options{})
	base := "/v1/channel/seating/events/ev_seated"
	tok := keyedTokenOn(t, s, base)
	expect(t, s.Do(t, "POST", base+"/hold", keyed("a"), map[string]any{"holdToken": tok, "seatLabels": []string{"A-11", "A-12"}}), 200, "")
	ids, codes := concurrently(t, 20, func() *servertest.Response {
		return s.ReserveWithKey(t, "a", "ev_seated", "seated-same-key", map[string]any{"seatLabels": []string{"A-11", "A-12"}, "seatHoldToken": tok})
	})
	if len(ids) != 1 {
		t.Fatalf("%d distinct orders for one key: %v (refusals %v)", len(ids), ids, codes)
	}
	for code, n := range codes {
		if code != "DUPLICATE_IN_PROGRESS" {
			t.Fatalf("%d answered %s", n, code)
		}
	}
	if n := orderKeys(t, s); n != 1 {
		t.Fatalf("%d order keys in Redis, want 1", n)
	}
}

// TestKeyReusedForAnotherEventGivesTheSeatsBack: a key used for a GA order
// and then for a seated one is KEY_CONFLICT, and the seated request's seats
// stay with its hold token, so a retry with a new key reserves them.
func TestKeyReusedForAnotherEventGivesTheSeatsBack(t *testing.T) {
	s := start(t, servertest.Options{})
	base := "/v1/channel/seating/events/ev_seated"
	expect(t, s.ReserveWithKey(t, "a", "ev_ga", "reused-key", map[string]any{"selectedTicketId": "tk_b"}), 200, "")
	tok := keyedTokenOn(t, s, base)
	expect(t, s.Do(t, "POST", base+"/hold", keyed("a"), map[string]any{"holdToken": tok, "seatLabels": []string{"A-15"}}), 200, "")
	body := map[string]any{"seatLabels": []string{"A-15"}, "seatHoldToken": tok}
	expect(t, s.ReserveWithKey(t, "a", "ev_seated", "reused-key", body), 409, "KEY_CONFLICT")
	for _, k := range redisKeys(t, s) {
		if strings.Contains(k, ":ord:") && strings.Contains(k, "ev_seated") {
			t.Fatalf("the conflicting reserve left %s", k)
		}
	}
	o := mustReserve(t, s, "a", "ev_seated", body)
	expect(t, confirm(t, s, "a", o.OrderID, o.Amount, "p"), 200, "")
}

// keyedTokenOn takes a hold token as keyed partner a on a seating base path.
func keyedTokenOn(t *testing.T, s *servertest.Server, base string) string {
	t.Helper()
	r := s.Do(t, "POST", base+"/hold-token", keyed("a"), nil)
	expect(t, r, 200, "")
	var d struct{ HoldToken string }
	r.Decode(t, &d)
	return d.HoldToken
}
