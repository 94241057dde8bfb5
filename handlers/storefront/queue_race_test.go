package storefront_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/handlers/servertest"
)

// raceCatalog has sf_race, 20 tickets behind a first-come room whose T0
// passed.
func raceCatalog() string {
	past, soon := roomOpened()
	return shopCatalog(fmt.Sprintf(`
   {"id": "sf_race", "shortId": "sfrc1", "slug": "race", "name": "Race", "startsAt": "2099-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [],
    "tickets": [{"id": "tk", "name": "Entry", "price": 20, "capacity": 20}],
    "waitingRoom": {"opensAt": %q, "salesStartAt": %q, "mode": "fifo", "passTtl": 60}}
`, past, soon), "")
}

// jsonData decodes an answer's data into v; an error rather than a
// t.Fatal, for goroutines.
func jsonData(r *servertest.Response, v any) error {
	return json.Unmarshal(r.Data, v)
}

// Over HTTP, 1,000 buyers (each from an address of its own) join at once
// for 20 tickets: exactly 20 are let in, each with a pass of its own, and
// the rest wait. Waiters long-polling are told nothing while the 20 hold
// their passes, and every one of them hears the sell-out once the 20 have
// registered with them.
func TestWaitingRoomRaceAndSellOutOverHTTP(t *testing.T) {
	t.Parallel()
	const stock, buyers, workers, pollers = 20, 1000, 32, 100
	s := servertest.Start(t, servertest.Options{Trusted: "127.0.0.1/32"})
	s.Apply(t, []byte(raceCatalog()))
	type joined struct {
		email string
		ip    string
		p     place
	}
	places := make([]joined, buyers)
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				h := servertest.Shop()
				ip := fmt.Sprintf("10.20.%d.%d", i/250, i%250+1)
				h["X-Forwarded-For"] = ip
				email := fmt.Sprintf("race-%d@example.com", i)
				r := s.Do(t, "POST", "/v1/storefront/queue/sf_race/join", h, map[string]any{"email": email, "quantity": 1})
				if r.Status != 200 {
					t.Errorf("join %d: %s", i, r)
					continue
				}
				places[i] = joined{email: email, ip: ip}
				if err := jsonData(r, &places[i].p); err != nil {
					t.Errorf("join %d: %v", i, err)
				}
			}
		}()
	}
	for i := range buyers {
		next <- i
	}
	close(next)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var admitted []joined
	var waiting []joined
	seen := map[string]bool{}
	for _, j := range places {
		switch j.p.State {
		case "admitted":
			admitted = append(admitted, j)
			if j.p.Pass == "" || seen[j.p.Pass] {
				t.Fatalf("an admitted place without a pass of its own: %+v", j.p)
			}
			seen[j.p.Pass] = true
		case "waiting":
			waiting = append(waiting, j)
		default:
			t.Fatalf("a join answered %+v", j.p)
		}
	}
	if len(admitted) != stock || len(waiting) != buyers-stock {
		t.Fatalf("%d let in and %d waiting, want %d and %d", len(admitted), len(waiting), stock, buyers-stock)
	}

	// the last pollers long-poll: nothing to tell while the passes live
	told := make(chan place, pollers)
	for _, j := range waiting[len(waiting)-pollers:] {
		go func() {
			h := bearer(j.p.PollToken)
			h["X-Forwarded-For"] = j.ip
			r := s.Do(t, "GET", "/v1/storefront/queue/sf_race/status?wait=20", h, nil)
			var p place
			if r.Status != 200 || jsonData(r, &p) != nil {
				t.Errorf("long-poll: %s", r)
			}
			told <- p
		}()
	}
	select {
	case p := <-told:
		t.Fatalf("a long-poll answered while every pass was live: %+v", p)
	case <-time.After(300 * time.Millisecond):
	}
	for _, j := range admitted {
		h := servertest.Shop()
		h["X-Forwarded-For"], h["x-queue-pass"] = j.ip, j.p.Pass
		r := s.Do(t, "POST", "/v1/storefront/register-guest", h,
			servertest.Guest("sf_race", map[string]any{"selectedTicketId": "tk", "quantity": 1, "email": j.email}))
		expect(t, r, 200, "")
	}
	deadline := time.After(10 * time.Second)
	for n := range pollers {
		select {
		case p := <-told:
			if p.State != "sold_out" {
				t.Fatalf("a long-poll once every ticket was taken: %+v, want sold_out", p)
			}
		case <-deadline:
			t.Fatalf("%d of %d long-polls heard the sell-out within 10 s", n, pollers)
		}
	}
}
