package storefront_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/ticketd/ticketd/handlers/guard"
	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/room"
)

// farRoom is a server whose waiting room sf_room (2 tickets) has ann and
// bob admitted and six more waiting, c1 at the head to c6; a waiting
// place's poll is answered from the node's memory once its tick has read
// the line: exactly for the 3 at the head (RoomNearHead), by the line's
// sampled scores for c4 to c6.
func farRoom(t *testing.T) (*servertest.Server, map[string]place) {
	t.Helper()
	s := servertest.Start(t, servertest.Options{Trusted: "127.0.0.1/32", RoomNearHead: 3})
	s.Apply(t, []byte(roomCatalog()))
	ps := map[string]place{}
	for _, n := range []string{"ann", "bob", "c1", "c2", "c3", "c4", "c5", "c6"} {
		ps[n] = join(t, s, "sf_room", n+"@example.com", 1)
	}
	if ps["bob"].State != "admitted" || ps["c1"].State != "waiting" {
		t.Fatalf("joins: bob %+v, c1 %+v", ps["bob"], ps["c1"])
	}
	// The node's tick reads the frontier: wait for it, and for its line
	// scores (read once a second) to hold every join. A place that joined
	// after them is placed at the line's end as the tick counted it, so a
	// tick that ran just before c6's join answers c6 at place 6 by
	// chance, and the next one, counting c6, at 7: so the wait is first
	// past a scores read that followed the last join.
	time.Sleep(room.TickEvery + 1100*time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, trips, st := polled(t, s, "", ps["c6"], "203.0.113.99"); trips == 0 && st.Position == 6 {
			return s, ps
		}
		if time.Now().After(deadline) {
			t.Fatal("no status poll of a far place was answered from memory, at its place, within 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// polled polls p's status (query: "" or "?wait=N") from client ip,
// counting the request's Redis round trips.
func polled(t *testing.T, s *servertest.Server, query string, p place, ip string) (*servertest.Response, int, place) {
	t.Helper()
	h := bearer(p.PollToken)
	h[servertest.TripsHeader] = "1"
	h["X-Forwarded-For"] = ip
	r := s.Do(t, "GET", "/v1/storefront/queue/sf_room/status"+query, h, nil)
	trips, err := strconv.Atoi(r.Header.Get(servertest.TripsCount))
	if err != nil {
		t.Fatalf("no round-trip count: %s", r)
	}
	var out place
	if r.Status == 200 {
		r.Decode(t, &out)
	}
	return r, trips, out
}

// A waiter's polls, plain or long, far from the head or at it, cost Redis
// nothing and tell the truth (the tick lists the head's places in order);
// an admitted place's go to Redis with the rate limit (two round trips),
// and Redis gives the pass.
func TestWaitingPollsMakeNoRedisRoundTrips(t *testing.T) {
	t.Parallel()
	s, ps := farRoom(t)
	for i := range 20 {
		r, trips, st := polled(t, s, "", ps["c6"], "203.0.113.1")
		expect(t, r, 200, "")
		if trips != 0 || st.State != "waiting" || st.Position != 6 || st.Ahead != 5 || st.QueueID != ps["c6"].QueueID {
			t.Fatalf("far poll %d: %d round trips, %+v; want 0, waiting 5 ahead", i, trips, st)
		}
	}
	r, trips, st := polled(t, s, "?wait=1", ps["c5"], "203.0.113.1")
	expect(t, r, 200, "")
	if trips != 0 || st.State != "waiting" || st.Ahead != 4 {
		t.Fatalf("a far place's long-poll: %d round trips, %+v; want 0, waiting 4 ahead", trips, st)
	}
	r, trips, st = polled(t, s, "", ps["c2"], "203.0.113.1")
	expect(t, r, 200, "")
	if trips != 0 || st.State != "waiting" || st.Position != 2 || st.Ahead != 1 {
		t.Fatalf("a place near the head: %d round trips, %+v; want 0, waiting 1 ahead", trips, st)
	}
	// (a first call of a script on a Redis that has not seen it costs a
	// round trip or two more to load it: on a new Redis Cluster, the rate
	// limit's node may not have, so the poll counted is the second)
	polled(t, s, "", ps["ann"], "203.0.113.1")
	r, trips, st = polled(t, s, "", ps["ann"], "203.0.113.1")
	expect(t, r, 200, "")
	if trips != 2 || st.State != "admitted" || st.Pass == "" {
		t.Fatalf("an admitted place: %d round trips, %+v; want 2, admitted with a pass", trips, st)
	}
}

// A client hammering a far place's status is refused 429 RATE_LIMITED,
// with Retry-After, at the storefront's read limit, by the node alone (no
// Redis); another client is not.
func TestFarPollFloodIsRateLimited(t *testing.T) {
	t.Parallel()
	s, ps := farRoom(t)
	limit := int(guard.IPLimit(guard.Read))
	ok, refused := 0, 0
	for i := 0; i < limit+20; i++ {
		r, trips, _ := polled(t, s, "", ps["c6"], "203.0.113.2")
		if trips != 0 {
			t.Fatalf("poll %d: %d round trips, want 0 (answered or refused by the node)", i, trips)
		}
		switch r.Status {
		case 200:
			ok++
		case 429:
			refused++
			expect(t, r, 429, "RATE_LIMITED")
			secs, err := strconv.Atoi(r.Header.Get("Retry-After"))
			if err != nil || secs < 1 || r.Raw["retryAfter"] != float64(secs) || r.Header.Get("Access-Control-Allow-Origin") != servertest.ShopOrigin {
				t.Fatalf("the 429: Retry-After %q, CORS %q, body %s", r.Header.Get("Retry-After"), r.Header.Get("Access-Control-Allow-Origin"), r.Body)
			}
		default:
			t.Fatalf("poll %d: %s", i, r)
		}
	}
	// The burst, and the odd one the half second per request refills.
	if ok < limit || ok > limit+5 || refused == 0 {
		t.Fatalf("%d polls: %d answered, %d refused; want the burst of %d answered and the rest refused", limit+20, ok, refused, limit)
	}
	r, _, _ := polled(t, s, "", ps["c6"], "203.0.113.3")
	expect(t, r, 200, "")
	// A long-poll counts as a poll.
	r, trips, _ := polled(t, s, "?wait=5", ps["c6"], "203.0.113.2")
	if r.Status != 429 || trips != 0 {
		t.Fatalf("the flooding client's long-poll: %s after %d round trips, want 429 and none", r, trips)
	}
}

// A long-poll that began far from the head is woken near it once places
// ahead of it left and the tick admitted the next, and is answered from
// the head the tick read: no round trip, the right answer.
func TestLongPollWokenNearTheHeadIsAnsweredFromTheHead(t *testing.T) {
	t.Parallel()
	s, ps := farRoom(t)
	type answer struct {
		r     *servertest.Response
		trips int
		st    place
		took  time.Duration
	}
	got := make(chan answer, 1)
	start := time.Now()
	go func() {
		r, trips, st := polled(t, s, "?wait=20", ps["c4"], "203.0.113.4")
		got <- answer{r, trips, st, time.Since(start)}
	}()
	time.Sleep(300 * time.Millisecond) // c4's long-poll waits, 3 ahead
	for _, n := range []string{"ann", "bob"} {
		expect(t, s.Do(t, "POST", "/v1/storefront/queue/sf_room/leave", bearer(ps[n].PollToken), nil), 200, "")
	}
	select {
	case a := <-got:
		expect(t, a.r, 200, "")
		if a.trips != 0 || a.st.State != "waiting" || a.st.Ahead != 1 || a.took > 15*time.Second {
			t.Fatalf("c4's long-poll once two places left: %d round trips, %+v after %v; want 0, waiting 1 ahead",
				a.trips, a.st, a.took)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("c4's long-poll was not answered")
	}
}

// A client hammering an admitted place's status, which Redis answers, is
// refused by the Redis-backed limit: the refused poll costs the limit's
// round trip alone, the status script does not run.
func TestAdmittedPollFloodIsRateLimitedInRedis(t *testing.T) {
	t.Parallel()
	s, ps := farRoom(t)
	limit := int(guard.IPLimit(guard.Read))
	for i := 0; ; i++ {
		r, trips, _ := polled(t, s, "", ps["ann"], "203.0.113.5")
		if r.Status == 429 {
			expect(t, r, 429, "RATE_LIMITED")
			if trips != 1 || r.Header.Get("Retry-After") == "" || i < limit {
				t.Fatalf("poll %d refused after %d round trips, Retry-After %q; want the burst of %d first, then the limit's trip alone",
					i, trips, r.Header.Get("Retry-After"), limit)
			}
			return
		}
		if r.Status != 200 || trips != 2 {
			t.Fatalf("admitted poll %d: %s after %d round trips, want 200 after 2", i, r, trips)
		}
		if i > limit+20 {
			t.Fatalf("%d polls of an admitted place, none refused", i)
		}
	}
}

// A client flooding joins is refused 429 RATE_LIMITED at the storefront's
// write limit by the node alone: a refused join costs Redis nothing, an
// answered one its join's call (the limit is kept in the node's memory);
// another client is not refused.
func TestJoinFloodIsRateLimitedByTheNode(t *testing.T) {
	t.Parallel()
	s := servertest.Start(t, servertest.Options{Trusted: "127.0.0.1/32"})
	s.Apply(t, []byte(roomCatalog()))
	limit := int(guard.IPLimit(guard.Write))
	joinFrom := func(i int, ip string) (*servertest.Response, int) {
		h := servertest.Shop()
		h[servertest.TripsHeader] = "1"
		h["X-Forwarded-For"] = ip
		r := s.Do(t, "POST", "/v1/storefront/queue/sf_room/join", h,
			map[string]any{"email": "flood" + strconv.Itoa(i) + "@example.com", "quantity": 1})
		trips, err := strconv.Atoi(r.Header.Get(servertest.TripsCount))
		if err != nil {
			t.Fatalf("no round-trip count: %s", r)
		}
		return r, trips
	}
	ok, refused := 0, 0
	for i := 0; i < limit+10; i++ {
		r, trips := joinFrom(i, "203.0.113.7")
		switch r.Status {
		case 200:
			ok++
			if trips != 1 {
				t.Fatalf("join %d: %d round trips, want 1 (the join's call)", i, trips)
			}
		case 429:
			refused++
			expect(t, r, 429, "RATE_LIMITED")
			if trips != 0 || r.Header.Get("Retry-After") == "" {
				t.Fatalf("refused join %d: %d round trips, Retry-After %q; want none and a Retry-After", i, trips, r.Header.Get("Retry-After"))
			}
		default:
			t.Fatalf("join %d: %s", i, r)
		}
	}
	if ok < limit || ok > limit+2 || refused == 0 {
		t.Fatalf("%d joins: %d answered, %d refused; want the burst of %d answered and the rest refused", limit+10, ok, refused, limit)
	}
	if r, _ := joinFrom(limit+10, "203.0.113.8"); r.Status != 200 {
		t.Fatalf("another client's join: %s", r)
	}
}
