package storefront_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/room"
)

// shopCatalog is a catalog of tenant t_shop, whose publishable key pk_shop
// serves shop.example.com, selling events (JSON objects, comma-separated),
// and of channels (JSON objects; "" none).
func shopCatalog(events, channels string) string {
	return `{"tenants": [{"id": "t_shop", "name": "Shop Host",
  "publishableKeys": [{"key": "pk_shop", "domains": ["shop.example.com"], "enabled": true}],
  "events": [` + events + `]}],
 "channels": [` + channels + `]}`
}

// partnerChannel is channel ch_p, the partner beside the rooms' tests.
const partnerChannel = `{"id": "ch_p", "name": "Partner", "key": "ck_p", "secret": "cs_p_secret", "signingKey": "sk_p",
   "scopes": ["catalog:read", "orders:write", "orders:confirm", "orders:read"],
   "ipAllowlist": ["127.0.0.1/32", "::1/128"], "settlement": "partner_remit"}`

// roomOpened is a room's opensAt and salesStartAt an hour and a minute
// ago (RFC 3339): its queue is open and its T0 passed.
func roomOpened() (opens, t0 string) {
	return time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
}

// roomCatalog has GA events with a waiting room: sf_room (first come, its
// T0 passed, 2 places), sf_room_fair (fair, T0 an hour ahead),
// sf_room_shown (fair, T0 passed) and sf_room_work (proof of work), and
// sf_plain without one.
func roomCatalog() string {
	past, soon := roomOpened()
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	return shopCatalog(fmt.Sprintf(`
   {"id": "sf_room", "shortId": "sfrm1", "slug": "room", "name": "Room", "startsAt": "2099-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [],
    "tickets": [{"id": "tk", "name": "Entry", "price": 20, "capacity": 2}],
    "waitingRoom": {"opensAt": %q, "salesStartAt": %q, "mode": "fifo", "perBuyer": 2}},
   {"id": "sf_room_fair", "shortId": "sfrm2", "slug": "room-fair", "name": "Fair Room", "startsAt": "2099-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [],
    "tickets": [{"id": "tk", "name": "Entry", "price": 20, "capacity": 5}],
    "waitingRoom": {"opensAt": %q, "salesStartAt": %q}},
   {"id": "sf_room_shown", "shortId": "sfrm3", "slug": "room-shown", "name": "Fair Room, open", "startsAt": "2099-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [],
    "tickets": [{"id": "tk", "name": "Entry", "price": 20, "capacity": 5}],
    "waitingRoom": {"opensAt": %q, "salesStartAt": %q, "mode": "fair"}},
   {"id": "sf_room_work", "shortId": "sfrm4", "slug": "room-work", "name": "Room With Work", "startsAt": "2099-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [],
    "tickets": [{"id": "tk", "name": "Entry", "price": 20, "capacity": 5}],
    "waitingRoom": {"opensAt": %q, "salesStartAt": %q, "proofOfWork": {"minBits": 4, "maxBits": 6}}},
   {"id": "sf_plain", "shortId": "sfpl1", "slug": "plain", "name": "No Room", "startsAt": "2099-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [],
    "tickets": [{"id": "tk", "name": "Entry", "price": 20, "capacity": 5}]}
`, past, soon, past, later, past, soon, past, soon), "")
}

type place struct {
	QueueID       string `json:"queueId"`
	PollToken     string `json:"pollToken"`
	State         string `json:"state"`
	Quantity      int64  `json:"quantity"`
	Position      int64  `json:"position"`
	Ahead         int64  `json:"ahead"`
	ETASeconds    *int64 `json:"etaSeconds"`
	Odds          int64  `json:"odds"`
	Pass          string `json:"pass"`
	PassExpiresAt string `json:"passExpiresAt"`
	Fairness      struct {
		Mode       string `json:"mode"`
		Commitment string `json:"commitment"`
		ShuffleKey string `json:"shuffleKey"`
	} `json:"fairness"`
}

func join(t testing.TB, s *servertest.Server, ev, email string, quantity int) place {
	t.Helper()
	r := s.Front(t, "POST", "/queue/"+ev+"/join", map[string]any{"email": email, "quantity": quantity, "device": "dev-" + email})
	expect(t, r, 200, "")
	var p place
	r.Decode(t, &p)
	return p
}

func bearer(tok string) map[string]string {
	h := servertest.Shop()
	h["Authorization"] = "Bearer " + tok
	return h
}

func status(t *testing.T, s *servertest.Server, ev string, p place) place {
	t.Helper()
	r := s.Do(t, "GET", "/v1/storefront/queue/"+ev+"/status", bearer(p.PollToken), nil)
	expect(t, r, 200, "")
	var out place
	r.Decode(t, &out)
	return out
}

// statusUntil polls p's status until its state is want (the line moves
// at the node's ticks, and a waiting place is answered from the last
// one's frontier), or fails after 10 s with the last answer.
func statusUntil(t *testing.T, s *servertest.Server, ev string, p place, want string) place {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := status(t, s, ev, p)
		if st.State == want || time.Now().After(deadline) {
			return st
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func registerWith(t *testing.T, s *servertest.Server, pass, email string, quantity int) *servertest.Response {
	t.Helper()
	h := servertest.Shop()
	if pass != "" {
		h["x-queue-pass"] = pass
	}
	return s.Do(t, "POST", "/v1/storefront/register-guest", h,
		servertest.Guest("sf_room", map[string]any{"selectedTicketId": "tk", "quantity": quantity, "email": email}))
}

// An event with a waiting room sells on the storefront only with a pass:
// buyers join, are admitted as many as there are tickets, register with
// their own pass once, and the next in line is admitted when a place is
// given back; a join once everything is sold is told so.
func TestWaitingRoomOverHTTP(t *testing.T) {
	t.Parallel()
	s := servertest.Start(t, servertest.Options{})
	s.Apply(t, []byte(roomCatalog()))

	expect(t, registerWith(t, s, "", "ann@example.com", 1), 403, "QUEUE_REQUIRED")

	ann := join(t, s, "sf_room", "ann@example.com", 1)
	bob := join(t, s, "sf_room", "bob@example.com", 1)
	cat := join(t, s, "sf_room", "cat@example.com", 1)
	if ann.State != "admitted" || ann.Pass == "" || ann.PassExpiresAt == "" || bob.State != "admitted" {
		t.Fatalf("the first two of two places: %+v %+v, want admitted with passes", ann, bob)
	}
	if cat.State != "waiting" || cat.Position != 1 || cat.Ahead != 0 || cat.Pass != "" {
		t.Fatalf("the third: %+v, want waiting at the head without a pass", cat)
	}
	again := join(t, s, "sf_room", "ANN@example.com", 1)
	if again.QueueID != ann.QueueID {
		t.Fatalf("a second join by the same e-mail: %s, want the first place %s", again.QueueID, ann.QueueID)
	}
	// whoever knows ann's address reads her place, but cannot take her out
	expect(t, s.Do(t, "POST", "/v1/storefront/queue/sf_room/leave", bearer(again.PollToken), nil), 401, "INVALID_CREDENTIALS")
	if strings.Contains(ann.Pass, ann.PollToken) || strings.Contains(ann.PollToken, ann.Pass) {
		t.Fatal("the pass and the poll token are one")
	}

	// a pass is its buyer's, and works once
	expect(t, registerWith(t, s, ann.Pass, "bob@example.com", 1), 403, "QUEUE_PASS_INVALID")
	expect(t, registerWith(t, s, ann.Pass+"x", "ann@example.com", 1), 403, "QUEUE_PASS_INVALID")
	expect(t, registerWith(t, s, ann.Pass, "ann@example.com", 2), 403, "QUEUE_PASS_INVALID")
	expect(t, registerWith(t, s, ann.Pass, "ann@example.com", 1), 200, "")
	expect(t, registerWith(t, s, ann.Pass, "ann@example.com", 1), 409, "QUEUE_PASS_USED")
	if st := status(t, s, "sf_room", ann); st.State != "admitted" || st.Pass != "" {
		t.Fatalf("ann after registering: %+v, want admitted without a pass", st)
	}

	// bob leaves: his place goes to cat at the next tick
	r := s.Do(t, "POST", "/v1/storefront/queue/sf_room/leave", bearer(bob.PollToken), nil)
	expect(t, r, 200, "")
	if st := status(t, s, "sf_room", bob); st.State != "left" {
		t.Fatalf("bob after leaving: %+v", st)
	}
	catNow := statusUntil(t, s, "sf_room", cat, "admitted")
	if catNow.State != "admitted" || catNow.Pass == "" {
		t.Fatalf("cat once bob left: %+v, want admitted", catNow)
	}
	expect(t, registerWith(t, s, bob.Pass, "bob@example.com", 1), 403, "QUEUE_PASS_EXPIRED")
	expect(t, registerWith(t, s, catNow.Pass, "cat@example.com", 1), 200, "")

	// both tickets are held: a new buyer is told at once
	expect(t, s.Front(t, "POST", "/queue/sf_room/join", map[string]any{"email": "dan@example.com"}), 409, "QUEUE_SOLD_OUT")

	// the bearer token is the place's, of this event
	expect(t, s.Do(t, "GET", "/v1/storefront/queue/sf_room/status", servertest.Shop(), nil), 401, "MISSING_CREDENTIALS")
	expect(t, s.Do(t, "GET", "/v1/storefront/queue/sf_room/status", bearer(ann.PollToken+"x"), nil), 401, "INVALID_CREDENTIALS")
	expect(t, s.Do(t, "GET", "/v1/storefront/queue/sf_room_fair/status", bearer(ann.PollToken), nil), 401, "INVALID_CREDENTIALS")
}

// Joins are checked like every storefront body, and an event without a
// room has no queue.
func TestWaitingRoomJoinRefusals(t *testing.T) {
	t.Parallel()
	s := servertest.Start(t, servertest.Options{})
	s.Apply(t, []byte(roomCatalog()))
	for _, c := range []struct {
		name   string
		path   string
		body   any
		status int
		code   string
	}{
		{"no e-mail", "/queue/sf_room/join", map[string]any{"quantity": 1}, 400, "INVALID_BUYER_EMAIL"},
		{"bad e-mail", "/queue/sf_room/join", map[string]any{"email": "not-an-address"}, 400, "INVALID_BUYER_EMAIL"},
		{"more than a buyer may ask", "/queue/sf_room/join", map[string]any{"email": "a@example.com", "quantity": 3}, 400, "INVALID_QUANTITY"},
		{"no units", "/queue/sf_room/join", map[string]any{"email": "a@example.com", "quantity": 0}, 400, "INVALID_QUANTITY"},
		{"a quantity that is no number", "/queue/sf_room/join", map[string]any{"email": "a@example.com", "quantity": "two"}, 400, "INVALID_REQUEST"},
		{"a device too long", "/queue/sf_room/join", map[string]any{"email": "a@example.com", "device": strings.Repeat("d", 65)}, 400, "INVALID_REQUEST"},
		{"no such event", "/queue/nope/join", map[string]any{"email": "a@example.com"}, 404, "EVENT_NOT_FOUND"},
		{"an event without a room", "/queue/sf_plain/join", map[string]any{"email": "a@example.com"}, 404, "NO_WAITING_ROOM"},
	} {
		t.Run(c.name, func(t *testing.T) {
			expect(t, s.Front(t, "POST", c.path, c.body), c.status, c.code)
		})
	}
}

// A fair room before T0: nobody is admitted, the wait until T0 is shown,
// and the commitment to the shuffle key is published, the key itself not;
// from T0 the key is shown, and it is the one committed to.
func TestFairRoomPublishesItsCommitmentBeforeT0(t *testing.T) {
	t.Parallel()
	s := servertest.Start(t, servertest.Options{})
	s.Apply(t, []byte(roomCatalog()))
	p := join(t, s, "sf_room_fair", "ann@example.com", 1)
	if p.State != "waiting" || p.Pass != "" || p.ETASeconds == nil || *p.ETASeconds < 3000 {
		t.Fatalf("before T0: %+v, want waiting, no pass, about an hour to wait", p)
	}
	if p.Fairness.Mode != "fair" || len(p.Fairness.Commitment) != 64 || p.Fairness.ShuffleKey != "" {
		t.Fatalf("fairness before T0: %+v, want a commitment and no key", p.Fairness)
	}
	if _, err := hex.DecodeString(p.Fairness.Commitment); err != nil {
		t.Fatal(err)
	}
	// the fifo room shows no commitment; its T0 passed
	q := join(t, s, "sf_room", "ann@example.com", 1)
	if q.Fairness.Mode != "fifo" || q.Fairness.Commitment != "" {
		t.Fatalf("fifo fairness: %+v", q.Fairness)
	}
	open := join(t, s, "sf_room_shown", "ann@example.com", 1).Fairness
	key, err := hex.DecodeString(open.ShuffleKey)
	if err != nil || len(key) == 0 {
		t.Fatalf("the shuffle key after T0: %q %v", open.ShuffleKey, err)
	}
	if sum := sha256.Sum256(key); hex.EncodeToString(sum[:]) != open.Commitment {
		t.Fatal("the key shown after T0 is not the one committed to")
	}
}

// The event detail tells a host's site that an event sells through a
// waiting room (its times, mode and places per buyer), so its page queues
// the buyer first; an event without a room says nothing of one.
func TestEventDetailSaysItHasAWaitingRoom(t *testing.T) {
	t.Parallel()
	s := servertest.Start(t, servertest.Options{})
	s.Apply(t, []byte(roomCatalog()))
	var ev struct {
		WaitingRoom *struct {
			OpensAt      string `json:"opensAt"`
			SalesStartAt string `json:"salesStartAt"`
			Mode         string `json:"mode"`
			PerBuyer     int64  `json:"perBuyer"`
		} `json:"waitingRoom"`
	}
	r := s.Front(t, "GET", "/events/sf_room", nil)
	expect(t, r, 200, "")
	r.Decode(t, &ev)
	w := ev.WaitingRoom
	if w == nil || w.Mode != "fifo" || w.PerBuyer != 2 || w.OpensAt == "" || w.SalesStartAt == "" {
		t.Fatalf("sf_room's detail: waitingRoom %+v, want fifo, 2 per buyer, with its times", w)
	}
	opens, err1 := time.Parse(time.RFC3339, w.OpensAt)
	t0, err2 := time.Parse(time.RFC3339, w.SalesStartAt)
	if err1 != nil || err2 != nil || !t0.After(opens) {
		t.Fatalf("waitingRoom times %q %q", w.OpensAt, w.SalesStartAt)
	}
	r = s.Front(t, "GET", "/events/sf_room_fair", nil)
	expect(t, r, 200, "")
	r.Decode(t, &ev)
	if ev.WaitingRoom == nil || ev.WaitingRoom.Mode != "fair" || ev.WaitingRoom.PerBuyer != 1 {
		t.Fatalf("sf_room_fair's detail: waitingRoom %+v, want fair (the default), 1 per buyer", ev.WaitingRoom)
	}
	ev.WaitingRoom = nil
	r = start(t).Front(t, "GET", "/events/sf_ga", nil)
	expect(t, r, 200, "")
	if strings.Contains(string(r.Data), "waitingRoom") {
		t.Fatalf("an event without a room: %s", r.Data)
	}
}

// status?wait=N is a long-poll: a waiting place's answer is held until
// what it says changes (here: a place ahead leaves, and it is admitted),
// and a wait that is not 0 to 30 whole seconds is refused. With known=
// (the state the client last heard), a place in another state is answered
// at once; known must be a place's state.
func TestQueueStatusLongPolls(t *testing.T) {
	t.Parallel()
	s := servertest.Start(t, servertest.Options{})
	s.Apply(t, []byte(roomCatalog()))
	join(t, s, "sf_room", "ann@example.com", 1)
	bob := join(t, s, "sf_room", "bob@example.com", 1)
	cat := join(t, s, "sf_room", "cat@example.com", 1)
	if cat.State != "waiting" {
		t.Fatalf("the third of two places: %+v, want waiting", cat)
	}
	for _, w := range []string{"x", "-1", "31", "1.5"} {
		expect(t, s.Do(t, "GET", "/v1/storefront/queue/sf_room/status?wait="+w, bearer(cat.PollToken), nil), 400, "INVALID_REQUEST")
	}
	for _, k := range []string{"WAITING", "sold", "x", "waiting%20"} {
		expect(t, s.Do(t, "GET", "/v1/storefront/queue/sf_room/status?wait=20&known="+k, bearer(cat.PollToken), nil), 400, "INVALID_REQUEST")
	}
	// cat waits; a client that heard otherwise (an answer of another
	// server, or one lost with its connection) is told at once
	start := time.Now()
	r := s.Do(t, "GET", "/v1/storefront/queue/sf_room/status?wait=20&known=sold_out", bearer(cat.PollToken), nil)
	expect(t, r, 200, "")
	var heard place
	if r.Decode(t, &heard); heard.State != "waiting" || time.Since(start) > 10*time.Second {
		t.Fatalf("a long-poll that heard sold_out of a waiting place: %+v after %v, want waiting at once", heard, time.Since(start))
	}
	// an admitted place has nothing to wait for
	start = time.Now()
	if r := s.Do(t, "GET", "/v1/storefront/queue/sf_room/status?wait=20", bearer(bob.PollToken), nil); r.Status != 200 || time.Since(start) > 10*time.Second {
		t.Fatalf("an admitted place's long-poll: %s after %v, want 200 at once", r, time.Since(start))
	}

	got := make(chan *servertest.Response, 1)
	go func() {
		got <- s.Do(t, "GET", "/v1/storefront/queue/sf_room/status?wait=20&known=waiting", bearer(cat.PollToken), nil)
	}()
	select {
	case r := <-got:
		t.Fatalf("the long-poll answered before anything changed: %s", r)
	case <-time.After(300 * time.Millisecond):
	}
	expect(t, s.Do(t, "POST", "/v1/storefront/queue/sf_room/leave", bearer(bob.PollToken), nil), 200, "")
	select {
	case r := <-got:
		expect(t, r, 200, "")
		var p place
		r.Decode(t, &p)
		if p.State != "admitted" || p.Pass == "" {
			t.Fatalf("cat's long-poll once bob left: %+v, want admitted with a pass", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cat's long-poll was not answered 10 s after bob left: no tick woke it")
	}
}

// A room with proof of work hands out challenges for an e-mail; a join
// without one is refused QUEUE_WORK_REQUIRED (with the difficulty), one
// with the challenge solved joins. A room without asks for none.
func TestQueueJoinWithProofOfWork(t *testing.T) {
	t.Parallel()
	s := servertest.Start(t, servertest.Options{})
	s.Apply(t, []byte(roomCatalog()))
	var detail struct {
		WaitingRoom struct {
			ProofOfWork bool `json:"proofOfWork"`
		} `json:"waitingRoom"`
	}
	r := s.Front(t, "GET", "/events/sf_room_work", nil)
	expect(t, r, 200, "")
	if r.Decode(t, &detail); !detail.WaitingRoom.ProofOfWork {
		t.Fatal("the event detail does not say joins need a proof of work")
	}
	r = s.Front(t, "POST", "/queue/sf_room_work/join", map[string]any{"email": "ann@example.com", "quantity": 1})
	expect(t, r, 403, "QUEUE_WORK_REQUIRED")
	if r.Raw["bits"] != float64(4) {
		t.Fatalf("the refusal's bits: %v, want 4", r.Raw["bits"])
	}
	r = s.Front(t, "POST", "/queue/sf_room_work/challenge", map[string]any{"email": "ann@example.com"})
	expect(t, r, 200, "")
	var c struct {
		Required  bool   `json:"required"`
		Challenge string `json:"challenge"`
		Bits      int    `json:"bits"`
		ExpiresAt string `json:"expiresAt"`
	}
	r.Decode(t, &c)
	if !c.Required || c.Challenge == "" || c.Bits != 4 || c.ExpiresAt == "" {
		t.Fatalf("challenge %+v", c)
	}
	nonce := ""
	for i := 0; nonce == ""; i++ {
		if room.Solves(c.Challenge, strconv.Itoa(i), c.Bits) {
			nonce = strconv.Itoa(i)
		}
	}
	work := map[string]string{"challenge": c.Challenge, "nonce": nonce + "0"}
	if room.Solves(c.Challenge, nonce+"0", c.Bits) {
		work["nonce"] = nonce + "1" // not this one either, then
	}
	expect(t, s.Front(t, "POST", "/queue/sf_room_work/join", map[string]any{"email": "ann@example.com", "work": work}), 403, "QUEUE_WORK_INVALID")
	work["nonce"] = nonce
	expect(t, s.Front(t, "POST", "/queue/sf_room_work/join", map[string]any{"email": "bob@example.com", "work": work}), 403, "QUEUE_WORK_INVALID")
	r = s.Front(t, "POST", "/queue/sf_room_work/join", map[string]any{"email": "ann@example.com", "work": work})
	expect(t, r, 200, "")
	var p place
	if r.Decode(t, &p); p.State != "admitted" {
		t.Fatalf("ann with her challenge solved: %+v, want admitted", p)
	}
	expect(t, s.Front(t, "POST", "/queue/sf_room_work/challenge", map[string]any{"email": "not an address"}), 400, "INVALID_BUYER_EMAIL")

	r = s.Front(t, "POST", "/queue/sf_room/challenge", map[string]any{"email": "ann@example.com"})
	expect(t, r, 200, "")
	var none map[string]any
	if r.Decode(t, &none); len(none) != 1 || none["required"] != false {
		t.Fatalf("a room without proof of work: %v, want required false alone", none)
	}
}
