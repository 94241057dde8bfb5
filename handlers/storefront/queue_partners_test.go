package storefront_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/handlers/servertest"
)

// partnersRoomCatalog: sf_room_pt sells 6 admissions, 2 of them through
// the partner channel ch_p (its allocation) and the 4 left through its
// waiting room, whose T0 has passed.
func partnersRoomCatalog() string {
	past, soon := roomOpened()
	return shopCatalog(fmt.Sprintf(`
   {"id": "sf_room_pt", "shortId": "sfrp1", "slug": "room-partners", "name": "Room And Partners", "startsAt": "2099-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": ["ch_p"],
    "tickets": [{"id": "tk", "name": "Entry", "price": 20, "capacity": 6}],
    "waitingRoom": {"opensAt": %q, "salesStartAt": %q, "mode": "fifo", "allocations": {"ch_p": 2}}}
`, past, soon), partnerChannel)
}

// remainingOf is an event detail's remaining admissions.
func remainingOf(t *testing.T, r *servertest.Response) int64 {
	t.Helper()
	expect(t, r, 200, "")
	var ev struct {
		Remaining *int64 `json:"remaining"`
	}
	r.Decode(t, &ev)
	if ev.Remaining == nil {
		t.Fatalf("event detail without remaining: %s", r)
	}
	return *ev.Remaining
}

// Partners sell beside a waiting room within their allocation, which the
// room's stock leaves out: a partner's sales never take a ticket the room
// admitted a buyer to, the room admits its whole stock whatever the
// partners sold, and each side is shown what it can sell.
func TestPartnersSellBesideTheRoomWithinTheirAllocation(t *testing.T) {
	t.Parallel()
	s := servertest.Start(t, servertest.Options{})
	s.Apply(t, []byte(partnersRoomCatalog()))
	const ev = "sf_room_pt"
	partner := servertest.Keyed("p")

	if n := remainingOf(t, s.Do(t, "GET", "/v1/channel/events/"+ev, partner, nil)); n != 2 {
		t.Fatalf("the partner is shown %d remaining, want its allocation, 2", n)
	}
	if n := remainingOf(t, s.Front(t, "GET", "/events/"+ev, nil)); n != 4 {
		t.Fatalf("the storefront is shown %d remaining, want the room's stock, 4", n)
	}

	// The partner sells its allocation (one paid, one pending) while the
	// room admits: neither takes from the other.
	paid := s.MustReserve(t, "p", ev, map[string]any{"selectedTicketId": "tk", "quantity": 1})
	expect(t, s.Confirm(t, "p", paid.OrderID, paid.Amount, "p-1"), 200, "")
	r := s.Reserve(t, "p", ev, map[string]any{"selectedTicketId": "tk", "quantity": 2})
	expect(t, r, 409, "QUANTITY_EXCEEDS_CAPACITY")
	if r.Raw["remaining"] != float64(1) {
		t.Fatalf("two more than the allocation's one left: %s, want remaining 1", r)
	}
	pending := s.MustReserve(t, "p", ev, map[string]any{"selectedTicketId": "tk", "quantity": 1})

	var places []place
	for i := range 5 {
		places = append(places, join(t, s, ev, fmt.Sprintf("buyer%d@example.com", i), 1))
	}
	for i, p := range places[:4] {
		if p.State != "admitted" || p.Pass == "" {
			t.Fatalf("buyer %d of the room's 4: %+v, want admitted with a pass", i, p)
		}
	}
	if places[4].State != "waiting" {
		t.Fatalf("the fifth: %+v, want waiting", places[4])
	}
	for i, p := range places[:4] {
		h := servertest.Shop()
		h["x-queue-pass"] = p.Pass
		r := s.Do(t, "POST", "/v1/storefront/register-guest", h,
			servertest.Guest(ev, map[string]any{"selectedTicketId": "tk", "quantity": 1, "email": fmt.Sprintf("buyer%d@example.com", i)}))
		expect(t, r, 200, "")
	}
	if st := statusUntil(t, s, ev, places[4], "sold_out"); st.State != "sold_out" {
		t.Fatalf("the fifth once the room's stock is held: %+v, want sold_out", st)
	}
	if n := remainingOf(t, s.Do(t, "GET", "/v1/channel/events/"+ev, partner, nil)); n != 1 {
		t.Fatalf("the partner is shown %d remaining with one order paid and one pending, want 1", n)
	}
	// The pending partner order still finds its unit; then every seller
	// sold its share and the event its capacity, no more.
	expect(t, s.Confirm(t, "p", pending.OrderID, pending.Amount, "p-2"), 200, "")
	expect(t, s.Reserve(t, "p", ev, map[string]any{"selectedTicketId": "tk", "quantity": 1}), 409, "EVENT_SOLD_OUT")
	sold, err := s.Redis.Do(context.Background(), s.Redis.B().Hgetall().Key(s.Space.Sold(ev)).Build()).AsIntMap()
	if err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]int64{"ev": 6, "sf": 4, "ch:ch_p": 2} {
		if sold[f] != want {
			t.Errorf("sold %s = %d, want %d (sold %v)", f, sold[f], want, sold)
		}
	}
}

// A channel taken out of a room's event after it sold: its allocation
// goes back to the room's stock, but its sales stay sold, so the room
// admits only what is left of the event (lib/room room_free), never a
// buyer to a unit the partner sold. The same bound holds for sales the
// storefront's share never counted (made before the shares were counted).
func TestARoomAdmitsNoUnitAPartnerSoldBeforeItLeftTheEvent(t *testing.T) {
	t.Parallel()
	s := servertest.Start(t, servertest.Options{})
	s.Apply(t, []byte(partnersRoomCatalog()))
	const ev = "sf_room_pt"
	for i := range 2 {
		o := s.MustReserve(t, "p", ev, map[string]any{"selectedTicketId": "tk", "quantity": 1})
		expect(t, s.Confirm(t, "p", o.OrderID, o.Amount, fmt.Sprint("p-", i)), 200, "")
	}
	without := strings.Replace(partnersRoomCatalog(), `"channels": ["ch_p"]`, `"channels": []`, 1)
	without = strings.Replace(without, `, "allocations": {"ch_p": 2}`, "", 1)
	s.Apply(t, []byte(without))
	r := s.Front(t, "GET", "/events/"+ev, nil)
	expect(t, r, 200, "")
	var detail struct {
		Tickets []struct {
			Remaining int64 `json:"remaining"`
		} `json:"tickets"`
	}
	r.Decode(t, &detail)
	if len(detail.Tickets) != 1 || detail.Tickets[0].Remaining != 4 {
		t.Fatalf("the storefront's ticket: %s, want 4 remaining, what the partner left", r)
	}
	admitted := 0
	for i := range 6 {
		if p := join(t, s, ev, fmt.Sprintf("late%d@example.com", i), 1); p.State == "admitted" {
			admitted++
		}
	}
	if admitted != 4 {
		t.Fatalf("%d admitted, want the 4 units left of 6 after the partner's 2", admitted)
	}
}
