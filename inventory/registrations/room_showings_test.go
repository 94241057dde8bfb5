package registrations

import (
	"fmt"
	"testing"
	"time"

	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/room"
)

// showingLines compiles evGA as a multi-showing event with a waiting room
// whose T0 passed: showings sh_a and sh_b of 1 ticket each, a line each.
func showingLines(t *testing.T) *catalog.Room {
	t.Helper()
	opens, t0 := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	doc, err := catalog.Decode([]byte(fmt.Sprintf(`{"tenants": [{"id": %q, "name": "T", "events": [
  {"id": %q, "shortId": "twon1", "slug": "two-nights", "name": "Two Nights", "startsAt": "2099-07-01T18:00:00Z", "status": "on_sale", "storefront": true,
   "showings": [{"id": "sh_a", "startsAt": "2099-07-01T18:00:00Z", "capacity": 1},
                {"id": "sh_b", "startsAt": "2099-07-02T18:00:00Z", "capacity": 1}],
   "tickets": [{"id": "tk", "name": "Entry", "price": 10, "capacity": 2}],
   "waitingRoom": {"opensAt": %q, "salesStartAt": %q, "mode": "fifo", "passTtl": 60}}]}]}`, tenant, evGA, opens, t0)))
	if err != nil {
		t.Fatal(err)
	}
	if err := catalog.Validate(doc); err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Compile(1, doc.Tenants, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return snap.Events[evGA].Room
}

// A registration of a showing burns a pass of that showing's line, and a
// payment that comes after it lapsed takes its unit back only from what
// that line's live passes do not hold: the figures the script reads are
// the showing's, in the event's one room hash.
func TestAShowingsLatePaymentDoesNotTakeAUnitItsLinesPassHolds(t *testing.T) {
	b := setup(t)
	b.caps(t, evGA, "t:tk", "2", "ev", "2", "sh:sh_a", "1", "sh:sh_b", "1")
	rs := &room.Service{Redis: b.rc, Space: b.sp, Key: []byte("room-key")}
	lines := showingLines(t)
	a, _ := lines.Line("sh_a")
	join := func(email, showing string) room.Joined {
		t.Helper()
		line, _ := lines.Line(showing)
		j, err := rs.Join(b.ctx, line, room.JoinRequest{EventID: evGA, ShowingID: showing, Email: email, Quantity: 1})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	ann := join("ann@x.test", "sh_a")
	if ann.State != room.Admitted || b.roomIntOf(t, evGA, "resv:sh_a") != 1 {
		t.Fatalf("ann in sh_a's line: %+v, resv:sh_a %d; want admitted, 1 reserved", ann, b.roomIntOf(t, evGA, "resv:sh_a"))
	}
	p, err := rs.CheckPass(a.ID, ann.Pass, "ann@x.test")
	if err != nil {
		t.Fatal(err)
	}
	req := gaReq(1, 1000, "ann@x.test")
	req.ShowingID, req.Quote.Claims["sh:sh_a"], req.Pass = "sh_a", 1, &p
	reg, err := b.regs.Register(b.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if resv, used := b.roomIntOf(t, evGA, "resv:sh_a"), b.roomIntOf(t, evGA, "used:sh_a"); resv != 0 || used != 1 {
		t.Fatalf("after ann's registration: resv:sh_a %d, used:sh_a %d; want 0 and 1", resv, used)
	}
	b.opened(t, reg.ID, "cs_a")
	b.expireNow(t, reg.ID) // sh_a's unit goes back to its line
	if bob := join("bob@x.test", "sh_a"); bob.State != room.Admitted {
		t.Fatalf("bob in sh_a's line: %+v, want admitted with the unit that came back", bob)
	}
	out, err := pay(b, reg.ID, "cs_a", 1000)
	if err != nil || out.Status != StatusRefundRequired || out.RefundReason != "sold_out" {
		t.Fatalf("ann's late payment: %+v %v, want a refund (sold_out): bob's pass holds sh_a's unit", out, err)
	}
	if cat := join("cat@x.test", "sh_b"); cat.State != room.Admitted {
		t.Fatalf("cat in sh_b's line: %+v, want admitted (its own showing's stock)", cat)
	}
}
