package storefront_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/servertest"
)

// queueRoutes are the waiting room's endpoints and the calls that take its
// pass (x-queue-pass): {id} is the event (the fuzzed id before '|'),
// {token} a hold token (after).
var queueRoutes = []string{
	"POST /v1/storefront/queue/{id}/challenge",
	"POST /v1/storefront/queue/{id}/join",
	"GET /v1/storefront/queue/{id}/status",
	"POST /v1/storefront/queue/{id}/leave",
	"POST /v1/storefront/register-guest",
	"POST /v1/storefront/seating/events/{id}/hold-token",
	"POST /v1/storefront/seating/events/{id}/best-available",
	"POST /v1/storefront/seating/events/{id}/hold",
	"POST /v1/storefront/seating/events/{id}/hold/{token}/extend",
}

// queueFuzzCatalog: fz_room (GA, first come, T0 passed, 2 places a
// buyer), fz_room_work (proof of work asked), fz_room_seats (seated, row
// A's 20 seats) and fz_plain without a room.
func queueFuzzCatalog() string {
	past, soon := roomOpened()
	return shopCatalog(fmt.Sprintf(`
   {"id": "fz_room", "shortId": "fzrm1", "slug": "fz-room", "name": "Room", "startsAt": "2099-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [],
    "tickets": [{"id": "tk", "name": "Entry", "price": 20, "capacity": 1000}],
    "waitingRoom": {"opensAt": %[1]q, "salesStartAt": %[2]q, "mode": "fifo", "perBuyer": 2}},
   {"id": "fz_room_work", "shortId": "fzrm2", "slug": "fz-room-work", "name": "Room With Work", "startsAt": "2099-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [],
    "tickets": [{"id": "tk", "name": "Entry", "price": 20, "capacity": 1000}],
    "waitingRoom": {"opensAt": %[1]q, "salesStartAt": %[2]q, "proofOfWork": {"minBits": 4, "maxBits": 6}}},
   {"id": "fz_room_seats", "shortId": "fzrs1", "slug": "fz-room-seats", "name": "Seated Room", "startsAt": "2099-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [], "tickets": [],
    "seatMap": {"categories": [{"id": "stalls", "name": "Stalls", "price": 30}],
      "rows": [{"label": "A", "seats": 20, "category": "stalls"}]},
    "waitingRoom": {"opensAt": %[1]q, "salesStartAt": %[2]q, "mode": "fifo", "perBuyer": 2}},
   {"id": "fz_plain", "shortId": "fzpl1", "slug": "fz-plain", "name": "No Room", "startsAt": "2099-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [],
    "tickets": [{"id": "tk", "name": "Entry", "price": 20, "capacity": 5}]}
`, past, soon), "")
}

// FuzzQueueHTTP sends fuzzed waiting-room requests through the whole
// stack (real Redis and Postgres): join, challenge, status (with its
// long-poll), leave, and the calls a pass is presented to, with fuzzed
// bearer tokens, passes, queries and bodies. As FuzzStorefrontHTTP: no
// answer may be a 5xx, and every refusal is the envelope with a code of
// the table. A status's wait is cut to a second, so a long-poll ends
// within the harness's 10 s.
func FuzzQueueHTTP(f *testing.F) {
	s := servertest.Start(f, servertest.Options{Trusted: "127.0.0.1/32"})
	s.Apply(f, []byte(queueFuzzCatalog()))
	vars := map[string]string{}
	// No name is the start of another: Subst replaces them in any order.
	for name, ev := range map[string]string{"GA": "fz_room", "SEAT": "fz_room_seats"} {
		p := join(f, s, ev, "seed-"+name+"@example.com", 2)
		if p.Pass == "" {
			f.Fatalf("the seed's join of %s was not let in: %+v", ev, p)
		}
		vars[name+"POLL"], vars[name+"PASS"] = p.PollToken, p.Pass
	}
	vars["OTHERPOLL"] = join(f, s, "fz_room", "other@example.com", 1).PollToken
	// A hold token made with a pass of its own (the seed's pass stays
	// unused for the fuzzer).
	tp := join(f, s, "fz_room_seats", "token@example.com", 2)
	vars["HOLD"] = passTokenOn(f, s, "fz_room_seats", tp.Pass)

	for _, seed := range []struct {
		route                    uint8
		id, query, headers, body string
	}{
		{0, "fz_room_work", "", "", `{"email":"ann@example.com"}`},
		{0, "fz_room", "", "", `{}`},
		{1, "fz_room", "", "", `{"email":"bob@example.com","quantity":1,"device":"dev-bob"}`},
		{1, "fz_room_work", "", "", `{"email":"cat@example.com","quantity":1,"work":{"challenge":"c","nonce":"1"}}`},
		{1, "fz_room_seats", "", "", `{"email":"dan@example.com","quantity":2,"showingId":"sh_1"}`},
		{1, "fz_plain", "", "", `{"email":"eve@example.com","quantity":1}`},
		{2, "fz_room", "", "Authorization: Bearer $GAPOLL", ""},
		{2, "fz_room", "wait=1", "Authorization: Bearer $OTHERPOLL", ""},
		{2, "fz_room", "wait=5&known=sold_out", "Authorization: Bearer $GAPOLL", ""},
		{2, "fz_room_seats", "wait=x", "Authorization: Bearer $SEATPOLL", ""},
		{2, "fz_room", "", "Authorization: Basic $GAPOLL", ""},
		{3, "fz_room", "", "Authorization: Bearer $OTHERPOLL", ""},
		{4, "", "", "x-queue-pass: $GAPASS", `{"eventId":"fz_room","name":"Grace Hopper","email":"seed-GA@example.com","selectedTicketId":"tk","quantity":2}`},
		{4, "", "", "x-queue-pass: $SEATPASS", `{"eventId":"fz_room_seats","name":"Grace Hopper","email":"token@example.com","seatLabels":["A-1"],"seatHoldToken":"$HOLD"}`},
		{5, "fz_room_seats", "", "x-queue-pass: $SEATPASS", `{}`},
		{6, "fz_room_seats", "", "x-queue-pass: $SEATPASS", `{"quantity":2,"category":"stalls"}`},
		{7, "fz_room_seats", "", "x-queue-pass: $SEATPASS", `{"holdToken":"$HOLD","seatLabels":["A-3","A-4"]}`},
		{8, "fz_room_seats|$HOLD", "", "", `{}`},
	} {
		f.Add(seed.route, seed.id, seed.query, seed.headers, []byte(seed.body))
	}

	f.Fuzz(func(t *testing.T, route uint8, id, query, headers string, body []byte) {
		method, _, path := servertest.FuzzTarget(queueRoutes, route, servertest.Subst(id, vars), shortWait(query), "/v1/storefront/")
		req := servertest.FuzzRequest{Method: method, Path: path, Body: []byte(servertest.Subst(string(body), vars))}
		req.Headers = [][2]string{{"x-service-key", "pk_shop"}, {"Origin", servertest.ShopOrigin},
			{"X-Forwarded-For", servertest.FuzzClientIP()}}
		req.Headers = append(req.Headers, servertest.FuzzHeaders(servertest.Subst(headers, vars))...)
		s.Send(t, req)
	})
}

// shortWait is query with a status's wait of more than a second cut to
// one, read as the server reads it (the query ends at a '#', then
// fasthttp's query parser): a waiting place's long-poll is rightly held
// for its whole wait, up to 30 s (room.MaxWait).
func shortWait(query string) string {
	var args fasthttp.Args
	query, _, _ = strings.Cut(query, "#")
	args.Parse(query)
	w := args.Peek("wait")
	if n, err := strconv.Atoi(string(w)); err != nil || n <= 1 {
		return query
	}
	args.Set("wait", "1")
	return args.String()
}
