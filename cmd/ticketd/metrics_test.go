package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/redistest"
)

// TestRebuildAtStartIsCounted: ticketd restarted on a Redis that lost its
// state (the probe) rebuilds it before it serves; that rebuild is
// in ticketd_rebuilds_total like one the monitor runs.
func TestRebuildAtStartIsCounted(t *testing.T) {
	cfg := localConfig(t)
	rc, space := redistest.New(t)
	cfg.KeyPrefix, cfg.Recovery = space.Prefix, recoveryAuto
	t.Run("first start", func(t *testing.T) { demoFlow(t, startTicketd(t, cfg)) })

	// Redis restarted empty: everything of the space is gone, the
	// generation markers too.
	ctx := context.Background()
	gone := append(redistest.Keys(t, rc, space), space.State())
	for p := range keys.Partitions {
		gone = append(gone, space.Live(p))
	}
	for _, k := range gone {
		if err := rc.Do(ctx, rc.B().Del().Key(k).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	base := startTicketd(t, cfg)
	st, body := call(t, "GET", base+"/metrics", nil, "")
	if st != 200 || !strings.Contains(body, "\nticketd_rebuilds_total{result=\"ok\"} 1\n") {
		t.Fatalf("/metrics after a rebuild at start: %d\n%s", st, grepLines(body, "ticketd_rebuilds_total"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestRoomMetricsFollowJoins: an event with a waiting room has its
// figures in /metrics, labelled by event (and showing, "" for an event
// without showings), read at each scrape: they move as buyers join (one
// admitted to the one ticket, one waiting).
func TestRoomMetricsFollowJoins(t *testing.T) {
	cfg := localConfig(t)
	cfg.AdminToken = "ops-token"
	base := startTicketd(t, cfg)
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	t0 := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	doc := fmt.Sprintf(`{"tenants": [{"id": "t_ops", "name": "Ops Host",
  "publishableKeys": [{"key": "pk_ops", "domains": ["localhost"], "enabled": true}],
  "events": [{"id": "ev_ops_room", "shortId": "opsr1", "slug": "ops-room", "name": "Ops Room", "startsAt": "2099-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [],
    "tickets": [{"id": "tk", "name": "Entry", "price": 20, "capacity": 1}],
    "waitingRoom": {"opensAt": %q, "salesStartAt": %q, "mode": "fifo"}}]}], "channels": []}`, past, t0)
	if st, body := call(t, "PUT", base+"/v1/admin/catalog", map[string]string{"Authorization": "Bearer ops-token"}, doc); st != 200 {
		t.Fatalf("apply: %d %s", st, body)
	}
	line := func(body, name string) string { return grepLines(body, name+`{event="ev_ops_room",showing=""}`) }
	_, body := call(t, "GET", base+"/metrics", nil, "")
	if got := line(body, "ticketd_room_waiting_places"); got != `ticketd_room_waiting_places{event="ev_ops_room",showing=""} 0` {
		t.Fatalf("an empty room: %q\n%s", got, grepLines(body, "ticketd_room_"))
	}
	front := map[string]string{"x-service-key": "pk_ops", "Origin": "http://localhost", "content-type": "application/json"}
	for _, email := range []string{"ann@example.com", "bob@example.com"} {
		if st, body := call(t, "POST", base+"/v1/storefront/queue/ev_ops_room/join", front, `{"email":"`+email+`"}`); st != 200 {
			t.Fatalf("join: %d %s", st, body)
		}
	}
	st, body := call(t, "GET", base+"/metrics", nil, "")
	if st != 200 {
		t.Fatalf("/metrics: %d", st)
	}
	for name, want := range map[string]string{
		"ticketd_room_waiting_places": "1", "ticketd_room_waiting_units": "1", "ticketd_room_reserved_units": "1",
		"ticketd_room_live_passes": "1", "ticketd_room_arrivals_total": "2", "ticketd_room_admitted_total": "1",
		"ticketd_room_passes_used_total": "0", "ticketd_room_passes_lapsed_total": "0",
	} {
		if got := line(body, name); got != name+`{event="ev_ops_room",showing=""} `+want {
			t.Errorf("after two joins: %q, want %s %s", got, name, want)
		}
	}
	if strings.Contains(body, `ticketd_room_waiting_places{event="ev_demo_ga"`) {
		t.Error("an event without a waiting room (ev_demo_ga) is in the room gauges")
	}
	if t.Failed() {
		t.Log(grepLines(body, "ticketd_room_"))
	}
}
