package storefront_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ticketd/ticketd/handlers/servertest"
)

// rulesServer trusts loopback's X-Forwarded-For, so each call of seat
// (below) comes from its own client IP and no test here meets the write
// limit of 30 a minute.
func rulesServer(t *testing.T) *servertest.Server {
	t.Helper()
	return servertest.StartStorefront(t, servertest.Options{Trusted: "127.0.0.1/32"})
}

var clientSeq atomic.Int64

// seat sends a storefront seating call for event from pk_shop's site.
func seat(t *testing.T, s *servertest.Server, method, event, path string, body any) *servertest.Response {
	t.Helper()
	h := servertest.Shop()
	n := clientSeq.Add(1)
	h["X-Forwarded-For"] = fmt.Sprintf("10.77.%d.%d", n/250%250, n%250+1)
	return s.Do(t, method, "/v1/storefront/seating/events/"+event+path, h, body)
}

func newToken(t *testing.T, s *servertest.Server, event string) string {
	t.Helper()
	r := seat(t, s, "POST", event, "/hold-token", nil)
	expect(t, r, 200, "")
	var d struct{ HoldToken string }
	r.Decode(t, &d)
	return d.HoldToken
}

func holdSeats(t *testing.T, s *servertest.Server, event, token string, labels ...string) *servertest.Response {
	t.Helper()
	return seat(t, s, "POST", event, "/hold", map[string]any{"holdToken": token, "seatLabels": labels})
}

// mustHold holds labels and fails the test unless the hold is taken.
func mustHold(t *testing.T, s *servertest.Server, event, token string, labels ...string) {
	t.Helper()
	expect(t, holdSeats(t, s, event, token, labels...), 200, "")
}

// refusedByRule checks r is the 409 SEAT_RULE naming seat in data and,
// in words, in the message.
func refusedByRule(t *testing.T, r *servertest.Response, seat, where string) {
	t.Helper()
	expect(t, r, 409, "SEAT_RULE")
	var d struct{ SeatLabel string }
	r.Decode(t, &d)
	if d.SeatLabel != seat {
		t.Fatalf("seatLabel %q, want %s: %s", d.SeatLabel, seat, r)
	}
	want := fmt.Sprintf("this choice would leave seat %s alone %s; add %s or pick other seats", seat, where, seat)
	if r.Message != want {
		t.Fatalf("message %q, want %q", r.Message, want)
	}
}

type held struct {
	HoldToken  string
	SeatLabels []string
	Subtotal   float64
	ExpiresAt  string
}

func best(t *testing.T, s *servertest.Server, event string, body map[string]any) *servertest.Response {
	t.Helper()
	return seat(t, s, "POST", event, "/best-available", body)
}

// mustBest runs best-available and returns what the token holds.
func mustBest(t *testing.T, s *servertest.Server, event string, body map[string]any) held {
	t.Helper()
	r := best(t, s, event, body)
	expect(t, r, 200, "")
	var h held
	r.Decode(t, &h)
	if h.HoldToken == "" || h.ExpiresAt == "" {
		t.Fatalf("best-available answer without token or expiry: %s", r)
	}
	return h
}

func heldSeats(t *testing.T, s *servertest.Server, event string) []string {
	t.Helper()
	r := seat(t, s, "GET", event, "/availability", nil)
	expect(t, r, 200, "")
	var av struct{ Held []string }
	r.Decode(t, &av)
	slices.Sort(av.Held)
	return av.Held
}

func TestConfigShowsTheSingleSeatRule(t *testing.T) {
	t.Parallel()
	s := rulesServer(t)
	for event, rule := range map[string]string{"sf_rules": "lenient", "strict": "strict", "sf_seated": "off"} {
		r := seat(t, s, "GET", event, "/config", nil)
		expect(t, r, 200, "")
		if !strings.Contains(string(r.Data), `"singleSeatRule":"`+rule+`"`) {
			t.Fatalf("%s config: %s, want singleSeatRule %s", event, r.Data, rule)
		}
	}
}

// Lenient (sf_rules): a hold may not leave one seat alone between taken
// seats, whoever holds them; a gap of two, a row's end and a row of one
// seat are fine.
func TestLenientRuleOnTheStorefront(t *testing.T) {
	t.Parallel()
	s := rulesServer(t)
	const ev = "sf_rules"
	other, mine := newToken(t, s, ev), newToken(t, s, ev)
	mustHold(t, s, ev, other, "A-3")
	refusedByRule(t, holdSeats(t, s, ev, mine, "A-5"), "A-4", "between taken seats")
	if got := heldSeats(t, s, ev); !slices.Equal(got, []string{"A-3"}) {
		t.Fatalf("a refused hold left seats held: %v", got)
	}
	mustHold(t, s, ev, mine, "A-6")                                                         // stay free together
	refusedByRule(t, holdSeats(t, s, ev, mine, "A-8"), "A-7", "between taken seats")        // my own A-6 counts
	refusedByRule(t, holdSeats(t, s, ev, mine, "A-1", "A-8"), "A-2", "between taken seats") // the first by number
	mustHold(t, s, ev, mine, "A-9")                                                         // A-10 alone at the row's end is fine
	mustHold(t, s, ev, mine, "S-1")                                                         // a row of one seat
	mustHold(t, s, ev, mine, "A-4", "A-5")                                                  // taking the gap along
	if got := heldSeats(t, s, ev); !slices.Equal(got, []string{"A-3", "A-4", "A-5", "A-6", "A-9", "S-1"}) {
		t.Fatalf("held %v", got)
	}
	// A conflict is answered before the rule.
	expect(t, holdSeats(t, s, ev, other, "A-4", "A-1"), 409, "SEAT_CONFLICT")
}

// Strict (sf_strict): not alone at a row's end either.
func TestStrictRuleOnTheStorefront(t *testing.T) {
	t.Parallel()
	s := rulesServer(t)
	const ev = "sf_strict"
	tok := newToken(t, s, ev)
	refusedByRule(t, holdSeats(t, s, ev, tok, "A-2"), "A-1", "at the end of its row")
	refusedByRule(t, holdSeats(t, s, ev, tok, "A-9"), "A-10", "at the end of its row")
	mustHold(t, s, ev, tok, "S-1") // a row of one seat is never stranded
	mustHold(t, s, ev, tok, "A-1", "A-2")
	refusedByRule(t, holdSeats(t, s, ev, tok, "A-4"), "A-3", "between taken seats")
	mustHold(t, s, ev, tok, "A-5") // stay free together
	if got := heldSeats(t, s, ev); !slices.Equal(got, []string{"A-1", "A-2", "A-5", "S-1"}) {
		t.Fatalf("held %v", got)
	}
}

func TestBestAvailablePicksTheMiddleOfTheFirstPricedRow(t *testing.T) {
	t.Parallel()
	s := rulesServer(t)
	// Row K is unpriced: row A is the first on sale; are its
	// middle. No token given: a new one holds them.
	h := mustBest(t, s, "rules", map[string]any{"quantity": 2})
	if !slices.Equal(h.SeatLabels, []string{"A-5", "A-6"}) || h.Subtotal != 100 {
		t.Fatalf("best 2: %+v, want A-5, A-6 for 100", h)
	}
	// The token is a hold token like hold-token's: it extends and releases.
	expect(t, seat(t, s, "POST", "sf_rules", "/hold/"+h.HoldToken+"/extend", nil), 200, "")
	// Next best: A-3 and A-4 (as near the middle as; lower first).
	if h2 := mustBest(t, s, "sf_rules", map[string]any{"quantity": 2}); !slices.Equal(h2.SeatLabels, []string{"A-3", "A-4"}) || h2.HoldToken == h.HoldToken {
		t.Fatalf("second best 2: %+v", h2)
	}
	// Under the rule off (sf_seated) the same call takes the middle too.
	if h3 := mustBest(t, s, "sf_seated", map[string]any{"quantity": 3}); !slices.Equal(h3.SeatLabels, []string{"A-9", "A-10", "A-11"}) {
		t.Fatalf("sf_seated best 3: %+v", h3)
	}
}

// With A-3 taken, A-5/A-6 would leave A-4 alone: best-available skips it
// for; and it never picks what someone holds.
func TestBestAvailableSkipsBlocksThatWouldStrand(t *testing.T) {
	t.Parallel()
	s := rulesServer(t)
	mustHold(t, s, "sf_rules", newToken(t, s, "sf_rules"), "A-3")
	h := mustBest(t, s, "sf_rules", map[string]any{"quantity": 2})
	if !slices.Equal(h.SeatLabels, []string{"A-4", "A-5"}) {
		t.Fatalf("best 2 beside A-3: %v, want A-4, A-5", h.SeatLabels)
	}
	// Strict: A-1..A-2 and A-9..A-10 are the only blocks of two that
	// strand nothing once A-3..A-8 are taken.
	tok := newToken(t, s, "sf_strict")
	mustHold(t, s, "sf_strict", tok, "A-3", "A-4", "A-5", "A-6", "A-7", "A-8")
	if h := mustBest(t, s, "sf_strict", map[string]any{"quantity": 1}); !slices.Equal(h.SeatLabels, []string{"S-1"}) {
		t.Fatalf("strict best 1: %v, want S-1 (one seat of A-1, A-2 would strand the other)", h.SeatLabels)
	}
	if h := mustBest(t, s, "sf_strict", map[string]any{"quantity": 2}); !slices.Equal(h.SeatLabels, []string{"A-1", "A-2"}) {
		t.Fatalf("strict best 2: %v", h.SeatLabels)
	}
}

func TestBestAvailableRespectsCategoryAndToken(t *testing.T) {
	t.Parallel()
	s := rulesServer(t)
	h := mustBest(t, s, "sf_rules", map[string]any{"quantity": 2, "category": "back"})
	if !slices.Equal(h.SeatLabels, []string{"C-3", "C-4"}) || h.Subtotal != 60 {
		t.Fatalf("best 2 of back: %+v, want C-3, C-4 for 60", h)
	}
	// Under a token of the caller's, beside the seats it holds.
	tok := newToken(t, s, "sf_rules")
	mustHold(t, s, "sf_rules", tok, "B-1")
	h = mustBest(t, s, "sf_rules", map[string]any{"quantity": 2, "category": "front", "holdToken": tok})
	if h.HoldToken != tok || !slices.Equal(h.SeatLabels, []string{"A-5", "A-6", "B-1"}) || h.Subtotal != 150 {
		t.Fatalf("best 2 under my token: %+v, want B-1, A-5, A-6 for 150", h)
	}
	// What the token holds is one hold: releasing it frees all three.
	r := seat(t, s, "POST", "sf_rules", "/release", map[string]any{"holdToken": tok})
	expect(t, r, 200, "")
	if !strings.Contains(string(r.Data), `"released":["A-5","A-6","B-1"]`) {
		t.Fatalf("release: %s", r.Data)
	}
}

func TestBestAvailableRefusals(t *testing.T) {
	t.Parallel()
	s := rulesServer(t)
	for _, q := range []any{0, 11, -1, nil} {
		r := best(t, s, "sf_rules", map[string]any{"quantity": q})
		expect(t, r, 400, "INVALID_REQUEST")
		if !strings.Contains(r.Message, "quantity must be between 1 and 10") {
			t.Fatalf("quantity %v: %s", q, r)
		}
	}
	r := best(t, s, "sf_rules", map[string]any{"quantity": 2, "category": "nope"})
	expect(t, r, 400, "INVALID_REQUEST")
	if !strings.Contains(r.Message, `"nope"`) {
		t.Fatalf("unknown category not named: %s", r)
	}
	expect(t, best(t, s, "sf_rules", map[string]any{"quantity": 2, "category": "crew"}), 400, "INVALID_REQUEST")
	expect(t, best(t, s, "sf_rules", map[string]any{"quantity": 2, "holdToken": "Bad{token}"}), 400, "INVALID_HOLD_TOKEN")
	r = best(t, s, "sf_rules", map[string]any{"quantity": 2, "holdToken": "h" + strings.Repeat("a", 26)})
	if r.Status != 409 || r.Code != "HOLD_EXPIRED" || r.Reason != "hold_expired" {
		t.Fatalf("a token never created: %s", r)
	}
	expect(t, best(t, s, "sf_ga", map[string]any{"quantity": 2}), 400, "NOT_SEATED")
	if got := heldSeats(t, s, "sf_rules"); len(got) != 0 {
		t.Fatalf("refused calls held %v", got)
	}
	// No block of 8 in row C (7 seats).
	noBlock(t, best(t, s, "sf_rules", map[string]any{"quantity": 8, "category": "back"}), 8)
}

func noBlock(t *testing.T, r *servertest.Response, q int) {
	t.Helper()
	expect(t, r, 409, "SEAT_CONFLICT")
	if string(r.Data) != `{"conflicts":[]}` {
		t.Fatalf("data %s, want no conflicts", r.Data)
	}
	if want := fmt.Sprintf("no %d adjacent seats are free together", q); !strings.Contains(r.Message, want) {
		t.Fatalf("message %q, want %q", r.Message, want)
	}
}

// Pairs fill row C (7 seats, lenient) best first, then there is none.
func TestBestAvailableUntilTheRowIsFull(t *testing.T) {
	t.Parallel()
	s := rulesServer(t)
	for _, want := range [][]string{{"C-3", "C-4"}, {"C-5", "C-6"}, {"C-1", "C-2"}} {
		if h := mustBest(t, s, "sf_rules", map[string]any{"quantity": 2, "category": "back"}); !slices.Equal(h.SeatLabels, want) {
			t.Fatalf("best 2: %v, want %v", h.SeatLabels, want)
		}
	}
	noBlock(t, best(t, s, "sf_rules", map[string]any{"quantity": 2, "category": "back"}), 2)
}

// Buyers racing for pairs on one row of 7 seats: nobody gets a seat twice,
// every pick is two adjacent seats of the row, and no more than the row is
// held.
func TestBestAvailableRaceNeverOverlaps(t *testing.T) {
	t.Parallel()
	s := rulesServer(t)
	const buyers = 16
	var wg sync.WaitGroup
	picks := make([][]string, buyers)
	for i := range buyers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := best(t, s, "sf_rules", map[string]any{"quantity": 2, "category": "back"})
			switch {
			case r.Status == 200:
				var h held
				r.Decode(t, &h)
				picks[i] = h.SeatLabels
			case r.Code != "SEAT_CONFLICT":
				t.Errorf("best-available: %s", r)
			}
		}()
	}
	wg.Wait()
	owner := map[string]int{}
	for i, p := range picks {
		if p == nil {
			continue
		}
		if len(p) != 2 || !strings.HasPrefix(p[0], "C-") || !strings.HasPrefix(p[1], "C-") {
			t.Fatalf("buyer %d got %v, want two seats of row C", i, p)
		}
		var a, b int
		fmt.Sscanf(p[0], "C-%d", &a)
		fmt.Sscanf(p[1], "C-%d", &b)
		if b != a+1 {
			t.Fatalf("buyer %d got %v: not adjacent", i, p)
		}
		for _, l := range p {
			if j, dup := owner[l]; dup {
				t.Fatalf("%s given to buyers %d and %d", l, j, i)
			}
			owner[l] = i
		}
	}
	if len(owner) == 0 || len(owner) > 7 {
		t.Fatalf("%d seats held by the race, want 1 to 7", len(owner))
	}
	all := make([]string, 0, len(owner))
	for l := range owner {
		all = append(all, l)
	}
	slices.Sort(all)
	if got := heldSeats(t, s, "sf_rules"); !slices.Equal(got, all) {
		t.Fatalf("held %v, buyers were given %v", got, all)
	}
	// The race kept the event's lenient rule: no free seat of row C is
	// left alone between taken ones.
	for n := 2; n <= 6; n++ {
		_, left := owner[fmt.Sprintf("C-%d", n-1)]
		_, self := owner[fmt.Sprintf("C-%d", n)]
		_, right := owner[fmt.Sprintf("C-%d", n+1)]
		if left && !self && right {
			t.Fatalf("C-%d left alone between taken seats by the race (held %v)", n, all)
		}
	}
}
