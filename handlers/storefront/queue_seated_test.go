package storefront_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ticketd/ticketd/handlers/servertest"
)

// seatedRoomCatalog: sf_room_seats sells row A's 6 seats (row X is not for
// sale) through a waiting room whose T0 has passed, 2 seats a buyer; the
// partner channel ch_p lists it with allocation 0.
func seatedRoomCatalog() string {
	past, soon := roomOpened()
	return shopCatalog(fmt.Sprintf(`
   {"id": "sf_room_seats", "shortId": "sfrs1", "slug": "room-seats", "name": "Seated Room", "startsAt": "2099-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": ["ch_p"], "tickets": [],
    "seatMap": {"categories": [{"id": "stalls", "name": "Stalls", "price": 30}, {"id": "box", "name": "Box"}],
      "rows": [{"label": "A", "seats": 6, "category": "stalls"}, {"label": "X", "seats": 2, "category": "box"}]},
    "waitingRoom": {"opensAt": %q, "salesStartAt": %q, "mode": "fifo", "perBuyer": 2, "allocations": {"ch_p": 0}}}
`, past, soon), partnerChannel)
}

const seatedRoom = "sf_room_seats"

// seatCall is a storefront seat call of sf_room_seats with the pass in its
// x-queue-pass header ("": none).
func seatCall(t testing.TB, s *servertest.Server, pass, path string, body any) *servertest.Response {
	t.Helper()
	return seatCallOn(t, s, seatedRoom, pass, path, body)
}

// seatCallOn is seatCall on event ev.
func seatCallOn(t testing.TB, s *servertest.Server, ev, pass, path string, body any) *servertest.Response {
	t.Helper()
	h := servertest.Shop()
	if pass != "" {
		h["x-queue-pass"] = pass
	}
	return s.Do(t, "POST", "/v1/storefront/seating/events/"+ev+path, h, body)
}

// passTokenOf makes the hold token of a pass (hold-token) and returns it.
func passTokenOf(t testing.TB, s *servertest.Server, pass string) string {
	t.Helper()
	return passTokenOn(t, s, seatedRoom, pass)
}

// passTokenOn is passTokenOf on event ev.
func passTokenOn(t testing.TB, s *servertest.Server, ev, pass string) string {
	t.Helper()
	r := seatCallOn(t, s, ev, pass, "/hold-token", nil)
	expect(t, r, 200, "")
	var d struct{ HoldToken string }
	r.Decode(t, &d)
	return d.HoldToken
}

func registerSeats(t *testing.T, s *servertest.Server, token, email string, labels ...string) *servertest.Response {
	t.Helper()
	return s.Front(t, "POST", "/register-guest",
		servertest.Guest(seatedRoom, map[string]any{"seatLabels": labels, "seatHoldToken": token, "email": email}))
}

// A seated event sells through its waiting room too: hold-token and
// best-available need a pass, which the token they make burns (a retry
// with it answers the same token, a second use of it is refused); the
// token holds at most the pass's seats, a token made without a pass holds
// none, and register-guest burns the place through the token, for the
// buyer who joined alone. A partner, with allocation 0, holds no seat.
func TestSeatedWaitingRoomOverHTTP(t *testing.T) {
	t.Parallel()
	s := servertest.Start(t, servertest.Options{})
	s.Apply(t, []byte(seatedRoomCatalog()))

	// no pass, no seats: nor through a token made elsewhere
	expect(t, seatCall(t, s, "", "/hold-token", nil), 403, "QUEUE_REQUIRED")
	expect(t, seatCall(t, s, "", "/best-available", map[string]any{"quantity": 1}), 403, "QUEUE_REQUIRED")
	partner := servertest.Keyed("p")
	expect(t, s.Do(t, "POST", "/v1/channel/seating/events/"+seatedRoom+"/hold-token", partner, nil), 403, "QUEUE_REQUIRED")
	expect(t, s.Do(t, "POST", "/v1/channel/seating/events/"+seatedRoom+"/hold", partner,
		map[string]any{"holdToken": "hpartnertoken1", "seatLabels": []string{"A-1"}}), 409, "HOLD_EXPIRED")

	ann := join(t, s, seatedRoom, "ann@example.com", 2)
	bob := join(t, s, seatedRoom, "bob@example.com", 2)
	cat := join(t, s, seatedRoom, "cat@example.com", 2)
	dan := join(t, s, seatedRoom, "dan@example.com", 1)
	if ann.State != "admitted" || bob.State != "admitted" || cat.State != "admitted" || dan.State != "waiting" {
		t.Fatalf("6 seats for 2+2+2+1: %s %s %s %s, want the first three admitted", ann.State, bob.State, cat.State, dan.State)
	}
	expect(t, seatCall(t, s, ann.Pass+"x", "/hold-token", nil), 403, "QUEUE_PASS_INVALID")

	tok := passTokenOf(t, s, ann.Pass)
	if again := passTokenOf(t, s, ann.Pass); again != tok {
		t.Fatalf("a retry with the pass: token %s, want the one it made, %s", again, tok)
	}
	var held struct {
		State     string `json:"state"`
		PassUsed  bool   `json:"passUsed"`
		SeatsHeld bool   `json:"seatsHeld"`
		Pass      string `json:"pass"`
	}
	r0 := s.Do(t, "GET", "/v1/storefront/queue/"+seatedRoom+"/status", bearer(ann.PollToken), nil)
	expect(t, r0, 200, "")
	if r0.Decode(t, &held); held.State != "admitted" || !held.PassUsed || !held.SeatsHeld || held.Pass != "" {
		t.Fatalf("ann once her pass made a token: %+v, want admitted, the pass used, her seats held", held)
	}
	// a place whose token holds its seats cannot leave, and says so
	r0 = s.Do(t, "POST", "/v1/storefront/queue/"+seatedRoom+"/leave", bearer(ann.PollToken), nil)
	if expect(t, r0, 200, ""); !strings.Contains(string(r0.Data), `"state":"admitted"`) {
		t.Fatalf("leave of a holding place: %s, want state admitted", r0.Data)
	}
	// the token holds the pass's 2 seats at most, and says so
	capped := hold(t, s, seatedRoom, tok, "A-1", "A-2", "A-3")
	if expect(t, capped, 400, "MAX_PER_ORDER_EXCEEDED"); !strings.Contains(capped.Message, "a waiting room pass for 2 seats") {
		t.Fatalf("the cap's message %q does not name the pass's seats", capped.Message)
	}
	expect(t, hold(t, s, seatedRoom, tok, "A-1", "A-2"), 200, "")

	// bob's pass through best-available: its token is the pass's, and
	// holds 2 seats at most
	expect(t, seatCall(t, s, bob.Pass, "/best-available", map[string]any{"quantity": 3}), 400, "MAX_PER_ORDER_EXCEEDED")
	r := seatCall(t, s, bob.Pass, "/best-available", map[string]any{"quantity": 2})
	expect(t, r, 200, "")
	var best struct {
		HoldToken  string   `json:"holdToken"`
		SeatLabels []string `json:"seatLabels"`
	}
	r.Decode(t, &best)
	if len(best.SeatLabels) != 2 || best.HoldToken == "" {
		t.Fatalf("bob's best-available: %+v", best)
	}
	if again := passTokenOf(t, s, bob.Pass); again != best.HoldToken {
		t.Fatalf("hold-token with bob's pass: %s, want best-available's %s", again, best.HoldToken)
	}
	// a token made without a pass holds nothing here
	expect(t, seatCall(t, s, "", "/best-available", map[string]any{"quantity": 1, "holdToken": "hnopass0001"}), 409, "HOLD_EXPIRED")

	// register-guest burns the place through the token, for its own buyer
	expect(t, registerSeats(t, s, tok, "bob@example.com", "A-1", "A-2"), 403, "QUEUE_PASS_INVALID")
	expect(t, registerSeats(t, s, tok, "ann@example.com", "A-1", "A-2"), 200, "")
	expect(t, registerSeats(t, s, tok, "ann@example.com", "A-1"), 409, "QUEUE_PASS_USED")
	expect(t, seatCall(t, s, ann.Pass, "/hold-token", nil), 409, "QUEUE_PASS_USED")
	expect(t, hold(t, s, seatedRoom, tok, "A-5"), 409, "QUEUE_PASS_USED") // its token holds no more
	r0 = s.Do(t, "GET", "/v1/storefront/queue/"+seatedRoom+"/status", bearer(ann.PollToken), nil)
	expect(t, r0, 200, "")
	held.SeatsHeld = false
	if r0.Decode(t, &held); !held.PassUsed || held.SeatsHeld {
		t.Fatalf("ann once registered: %+v, want the pass used and no seats held by its token", held)
	}

	// ann's seats are registered, bob's held, cat's pass holds 2: dan waits
	if st := status(t, s, seatedRoom, dan); st.State != "waiting" {
		t.Fatalf("dan with every seat held or promised: %+v", st)
	}
}

// seatedRaceCatalog: sf_race_seats sells rows A and B, 8 seats each,
// through a first-come room whose T0 passed, 2 seats a buyer.
func seatedRaceCatalog() string {
	past, soon := roomOpened()
	return shopCatalog(fmt.Sprintf(`
   {"id": "sf_race_seats", "shortId": "sfrs2", "slug": "race-seats", "name": "Seat Race", "startsAt": "2099-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [], "tickets": [],
    "seatMap": {"categories": [{"id": "std", "name": "Std", "price": 30}],
      "rows": [{"label": "A", "seats": 8, "category": "std"}, {"label": "B", "seats": 8, "category": "std"}]},
    "waitingRoom": {"opensAt": %q, "salesStartAt": %q, "mode": "fifo", "perBuyer": 2, "passTtl": 60}}
`, past, soon), "")
}

// Over HTTP, 300 buyers (each from an address of its own) join a seated
// room of 16 seats at once, asking for 1 or 2 seats: the room lets in no
// more seats than there are, and every buyer let in then holds as many
// seats as their pass covers (picking again when another took a seat
// first: nobody let in is left without seats), no seat twice, and
// registers them through the pass's token. The seats are then all sold,
// and a new join is told so.
func TestSeatedWaitingRoomRaceOverHTTP(t *testing.T) {
	t.Parallel()
	const seatsN, buyers, workers = 16, 300, 32
	const ev = "sf_race_seats"
	s := servertest.Start(t, servertest.Options{Trusted: "127.0.0.1/32"})
	s.Apply(t, []byte(seatedRaceCatalog()))
	type buyer struct {
		email, ip string
		want      int
		p         place
	}
	all := make([]buyer, buyers)
	headers := func(b buyer) map[string]string {
		h := servertest.Shop()
		h["X-Forwarded-For"] = b.ip
		return h
	}
	run := func(n int, f func(i int)) {
		var wg sync.WaitGroup
		next := make(chan int)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					f(i)
				}
			}()
		}
		for i := range n {
			next <- i
		}
		close(next)
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
	}
	run(buyers, func(i int) {
		b := buyer{email: fmt.Sprintf("seat-race-%d@example.com", i), ip: fmt.Sprintf("10.30.%d.%d", i/250, i%250+1), want: 1 + i%2}
		r := s.Do(t, "POST", "/v1/storefront/queue/"+ev+"/join", headers(b), map[string]any{"email": b.email, "quantity": b.want})
		if r.Status != 200 || jsonData(r, &b.p) != nil {
			t.Errorf("join %d: %s", i, r)
		}
		all[i] = b
	})
	var in []buyer
	units := 0
	for _, b := range all {
		if b.p.State == "admitted" {
			in = append(in, b)
			units += int(b.p.Quantity)
		}
	}
	if units > seatsN || units < seatsN-1 || len(in) == 0 {
		t.Fatalf("%d buyers let in for %d seats, want at most %d seats and no more than one left over", len(in), units, seatsN)
	}

	// every buyer let in holds their seats, picking free ones again when
	// beaten to one
	held := make([][]string, len(in))
	tokens := make([]string, len(in))
	run(len(in), func(i int) {
		b := in[i]
		h := headers(b)
		h["x-queue-pass"] = b.p.Pass
		r := s.Do(t, "POST", "/v1/storefront/seating/events/"+ev+"/hold-token", h, nil)
		var tok struct{ HoldToken string }
		if r.Status != 200 || jsonData(r, &tok) != nil {
			t.Errorf("hold-token of %s: %s", b.email, r)
			return
		}
		tokens[i] = tok.HoldToken
		for try := 0; try < 50; try++ {
			r := s.Do(t, "GET", "/v1/storefront/seating/events/"+ev+"/availability", headers(b), nil)
			var av struct{ Held, Booked []string }
			if r.Status != 200 || jsonData(r, &av) != nil {
				t.Errorf("availability: %s", r)
				return
			}
			taken := map[string]bool{}
			for _, l := range append(av.Held, av.Booked...) {
				taken[l] = true
			}
			var pick []string
			for _, row := range []string{"A", "B"} {
				for n := 1; n <= 8 && len(pick) < int(b.p.Quantity); n++ {
					if l := fmt.Sprintf("%s-%d", row, n); !taken[l] {
						pick = append(pick, l)
					}
				}
			}
			if len(pick) < int(b.p.Quantity) {
				t.Errorf("%s, let in for %d seats, finds %v free", b.email, b.p.Quantity, pick)
				return
			}
			r = s.Do(t, "POST", "/v1/storefront/seating/events/"+ev+"/hold", headers(b), map[string]any{"holdToken": tok.HoldToken, "seatLabels": pick})
			if r.Status == 409 && r.Code == "SEAT_CONFLICT" {
				continue
			}
			if r.Status != 200 {
				t.Errorf("hold of %s: %s", b.email, r)
				return
			}
			held[i] = pick
			return
		}
		t.Errorf("%s found no seats in 50 tries", b.email)
	})
	owner := map[string]int{}
	for i, ls := range held {
		for _, l := range ls {
			if j, ok := owner[l]; ok {
				t.Fatalf("seat %s held by %s and %s", l, in[j].email, in[i].email)
			}
			owner[l] = i
		}
	}
	run(len(in), func(i int) {
		r := s.Do(t, "POST", "/v1/storefront/register-guest", headers(in[i]),
			servertest.Guest(ev, map[string]any{"seatLabels": held[i], "seatHoldToken": tokens[i], "email": in[i].email}))
		if r.Status != 200 {
			t.Errorf("register of %s: %s", in[i].email, r)
		}
	})
	if units == seatsN {
		expect(t, s.Front(t, "POST", "/queue/"+ev+"/join", map[string]any{"email": "late@example.com"}), 409, "QUEUE_SOLD_OUT")
	}
}
