package storefront_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/handlers/servertest"
)

// showingsRoomCatalog has sf_shows, a GA event of two showings with a
// waiting room: sh_a of 1 ticket and sh_b of 2, a line each, first come.
func showingsRoomCatalog() string {
	past, t0 := roomOpened()
	return shopCatalog(fmt.Sprintf(`
   {"id": "sf_shows", "shortId": "sfsh1", "slug": "shows", "name": "Two Nights", "startsAt": "2099-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [],
    "showings": [{"id": "sh_a", "startsAt": "2099-07-01T18:00:00Z", "capacity": 1},
                 {"id": "sh_b", "startsAt": "2099-07-02T18:00:00Z", "capacity": 2}],
    "tickets": [{"id": "tk", "name": "Entry", "price": 20, "capacity": 3}],
    "waitingRoom": {"opensAt": %q, "salesStartAt": %q, "mode": "fifo", "perBuyer": 2}}
`, past, t0), "")
}

type showingPlace struct {
	place
	ShowingID string `json:"showingId"`
}

func joinShowing(t *testing.T, s *servertest.Server, showing, email string) showingPlace {
	t.Helper()
	r := s.Front(t, "POST", "/queue/sf_shows/join", map[string]any{"email": email, "quantity": 1, "showingId": showing})
	expect(t, r, 200, "")
	var p showingPlace
	r.Decode(t, &p)
	if p.ShowingID != showing {
		t.Fatalf("%s joined %s: the answer names showing %q", email, showing, p.ShowingID)
	}
	return p
}

func registerShowing(t *testing.T, s *servertest.Server, showing, pass, email string) *servertest.Response {
	t.Helper()
	h := servertest.Shop()
	h["x-queue-pass"] = pass
	return s.Do(t, "POST", "/v1/storefront/register-guest", h,
		servertest.Guest("sf_shows", map[string]any{"selectedTicketId": "tk", "quantity": 1, "email": email, "showingId": showing}))
}

// A multi-showing event has a line per showing: each admits against its
// own showing's stock, a buyer may wait in each, a pass buys for its own
// showing only, and a poll token reads its own showing's place.
func TestAMultiShowingEventHasALinePerShowing(t *testing.T) {
	t.Parallel()
	s := servertest.Start(t, servertest.Options{})
	s.Apply(t, []byte(showingsRoomCatalog()))

	expect(t, s.Front(t, "POST", "/queue/sf_shows/join", map[string]any{"email": "a@example.com"}), 400, "SHOWING_REQUIRED")
	expect(t, s.Front(t, "POST", "/queue/sf_shows/join", map[string]any{"email": "a@example.com", "showingId": "sh_c"}), 400, "SHOWING_NOT_FOUND")

	ann := joinShowing(t, s, "sh_a", "ann@example.com")
	bob := joinShowing(t, s, "sh_a", "bob@example.com")
	cat := joinShowing(t, s, "sh_b", "cat@example.com")
	dee := joinShowing(t, s, "sh_b", "dee@example.com")
	if ann.State != "admitted" || bob.State != "waiting" || bob.Position != 1 {
		t.Fatalf("sh_a, 1 ticket: ann %+v, bob %+v; want ann admitted and bob first in line", ann, bob)
	}
	if cat.State != "admitted" || dee.State != "admitted" {
		t.Fatalf("sh_b, 2 tickets, its own line: cat %+v, dee %+v; want both admitted", cat, dee)
	}
	// ann waits for sh_b too: a place of that line, behind its stock
	annB := joinShowing(t, s, "sh_b", "ann@example.com")
	if annB.QueueID == ann.QueueID || annB.State != "waiting" || annB.Position != 1 {
		t.Fatalf("ann in sh_b's line: %+v (sh_a's place %s), want a place of its own, first in line", annB, ann.QueueID)
	}

	// a pass buys its own showing only
	expect(t, registerShowing(t, s, "sh_b", ann.Pass, "ann@example.com"), 403, "QUEUE_PASS_INVALID")
	expect(t, registerShowing(t, s, "sh_a", cat.Pass, "cat@example.com"), 403, "QUEUE_PASS_INVALID")
	expect(t, registerShowing(t, s, "sh_a", ann.Pass, "ann@example.com"), 200, "")
	expect(t, registerShowing(t, s, "sh_a", ann.Pass, "ann@example.com"), 409, "QUEUE_PASS_USED")

	// sh_a is held by ann's registration: bob is told; sh_b's line is not
	if st := statusUntil(t, s, "sf_shows", bob.place, "sold_out"); st.State != "sold_out" {
		t.Fatalf("bob once sh_a's ticket is held: %+v, want sold_out", st)
	}
	if st := status(t, s, "sf_shows", annB.place); st.State != "waiting" {
		t.Fatalf("ann in sh_b's line: %+v, want waiting", st)
	}

	// cat gives sh_b's place back: ann, first in that line, is admitted
	expect(t, s.Do(t, "POST", "/v1/storefront/queue/sf_shows/leave", bearer(cat.PollToken), nil), 200, "")
	annNow := statusUntil(t, s, "sf_shows", annB.place, "admitted")
	if annNow.State != "admitted" || annNow.Pass == "" {
		t.Fatalf("ann in sh_b's line once cat left: %+v, want admitted", annNow)
	}
	expect(t, registerShowing(t, s, "sh_b", annNow.Pass, "ann@example.com"), 200, "")
	expect(t, registerShowing(t, s, "sh_b", dee.Pass, "dee@example.com"), 200, "")
	expect(t, s.Front(t, "POST", "/queue/sf_shows/join", map[string]any{"email": "eve@example.com", "showingId": "sh_b"}), 409, "QUEUE_SOLD_OUT")

	// a poll token names its showing, under the room's signature
	parts := strings.Split(bob.PollToken, ".")
	if len(parts) != 6 {
		t.Fatalf("a showing's poll token %q: want 6 parts (the showing before the mac)", bob.PollToken)
	}
	parts[4] = "c2hfYg" // base64url "sh_b"
	expect(t, s.Do(t, "GET", "/v1/storefront/queue/sf_shows/status", bearer(strings.Join(parts, ".")), nil), 401, "INVALID_CREDENTIALS")
	expect(t, s.Do(t, "GET", "/v1/storefront/queue/sf_room/status", bearer(bob.PollToken), nil), 404, "EVENT_NOT_FOUND")
}
