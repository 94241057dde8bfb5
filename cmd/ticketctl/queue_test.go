package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/handlers/admin"
	"github.com/ticketd/ticketd/handlers/servertest"
)

const queueBody = `{"success":true,"data":{"eventId":"ev_room",
 "room":{"opensAt":"2027-06-01T09:00:00Z","salesStartAt":"2027-06-01T10:00:00Z","passTtl":120,"perBuyer":2,"mode":"fair","stock":100},
 "stats":{"arrivals":9,"waiting":4,"waitingUnits":6,"reserved":3,"livePasses":2,"admitted":5,"used":2,"lapsed":1,"conversion":0.6666666666666666}}}`

// queue GETs the admin read with the token and prints a short table.
func TestQueuePrintsTheRoom(t *testing.T) {
	t.Parallel()
	srv, got := adminServer(t, 200, queueBody)
	r := ticketctl(map[string]string{"TICKETD_URL": srv.URL + "/", "TICKETD_ADMIN_TOKEN": "s3cret"}, "", "queue", "ev_room")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	for _, line := range []string{
		"event           ev_room\n", "mode            fair\n", "opens at        2027-06-01T09:00:00Z\n",
		"sales start at  2027-06-01T10:00:00Z\n", "pass ttl        120s\n", "per buyer       2\n", "stock           100\n",
		"arrivals        9\n", "waiting         4 places, 6 tickets\n", "live passes     2, holding 3 tickets\n",
		"admitted        5 (the frontier)\n", "passes used     2\n", "passes lapsed   1\n", "conversion      66.7% (used / (used + lapsed))\n",
	} {
		if !strings.Contains(r.stdout, line) {
			t.Errorf("no line %q in\n%s", line, r.stdout)
		}
	}
	reqs := got()
	if len(reqs) != 1 || reqs[0].method != "GET" || reqs[0].path != "/v1/admin/events/ev_room/queue" || reqs[0].auth != "Bearer s3cret" {
		t.Fatalf("server saw %+v", reqs)
	}
}

// On a multi-showing event -showing names the line, on the room and its
// audit alike, and the printout says which.
func TestQueueOfAShowingsLine(t *testing.T) {
	t.Parallel()
	body := strings.Replace(queueBody, `"eventId":"ev_room"`, `"eventId":"ev_room","showingId":"sh_2"`, 1)
	if body == queueBody {
		t.Fatal("queueBody has no eventId to follow")
	}
	srv, got := adminServer(t, 200, body)
	vars := map[string]string{"TICKETD_URL": srv.URL, "TICKETD_ADMIN_TOKEN": "t"}
	r := ticketctl(vars, "", "queue", "-showing", "sh_2", "ev_room")
	if r.code != 0 || !strings.Contains(r.stdout, "showing         sh_2\n") {
		t.Fatalf("exit %d, stderr %q, stdout\n%s", r.code, r.stderr, r.stdout)
	}
	ticketctl(vars, "", "queue", "-showing", "sh_2", "-audit", "ev_room")
	reqs := got()
	if len(reqs) != 2 || reqs[0].path != "/v1/admin/events/ev_room/queue" || reqs[0].query != "showingId=sh_2" ||
		reqs[1].path != "/v1/admin/events/ev_room/queue/audit" || reqs[1].query != "count=10000&showingId=sh_2" {
		t.Fatalf("server saw %+v", reqs)
	}
	srv2, _ := adminServer(t, 400, `{"success":false,"code":"SHOWING_REQUIRED","message":"this event has several showings: send showingId"}`)
	r = ticketctl(map[string]string{"TICKETD_URL": srv2.URL, "TICKETD_ADMIN_TOKEN": "t"}, "", "queue", "ev_room")
	if r.code != 1 || !strings.Contains(r.stderr, "event ev_room has a line per showing: name one with -showing <showing-id>") {
		t.Fatalf("without -showing: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestQueueJSON(t *testing.T) {
	t.Parallel()
	srv, _ := adminServer(t, 200, queueBody)
	r := ticketctl(map[string]string{"TICKETD_ADMIN_TOKEN": "t"}, "", "queue", "-json", "-url", srv.URL, "ev_room")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	var v admin.QueueView
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.EventID != "ev_room" || v.Stats.Admitted != 5 || v.Room.Mode != "fair" {
		t.Fatalf("-json: %v %+v\n%s", err, v, r.stdout)
	}
}

func TestQueueRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		vars        map[string]string
		args        []string
		status      int
		body        string
		code        int
		wantsStderr string
	}{
		{"no token", map[string]string{}, []string{"queue", "ev_room"}, 200, queueBody, 2, "no admin token: set TICKETD_ADMIN_TOKEN or pass -token"},
		{"no event", map[string]string{"TICKETD_ADMIN_TOKEN": "t"}, []string{"queue"}, 200, queueBody, 2, "one event id is required"},
		{"no room", map[string]string{"TICKETD_ADMIN_TOKEN": "t"}, []string{"queue", "ev_plain"}, 404,
			`{"success":false,"code":"NO_WAITING_ROOM","message":"this event has no waiting room","eventId":"ev_plain"}`, 1,
			"event ev_plain has no waiting room (its catalog event has no waitingRoom)"},
		{"unknown event", map[string]string{"TICKETD_ADMIN_TOKEN": "t"}, []string{"queue", "ev_x"}, 404,
			`{"success":false,"code":"EVENT_NOT_FOUND","message":"no event with this id in the catalog"}`, 1, `no event "ev_x" in ticketd's catalog`},
		{"admin off", map[string]string{"TICKETD_ADMIN_TOKEN": "t"}, []string{"queue", "ev_room"}, 404,
			`{"success":false,"code":"NOT_FOUND","message":"not found"}`, 1, "its admin surface is off (start ticketd with TICKETD_ADMIN_TOKEN)"},
		{"wrong token", map[string]string{"TICKETD_ADMIN_TOKEN": "t"}, []string{"queue", "ev_room"}, 401,
			`{"success":false,"code":"ADMIN_UNAUTHORIZED","message":"a valid Authorization: Bearer admin token is required"}`, 1, "ADMIN_UNAUTHORIZED (HTTP 401)"},
		{"a proxy", map[string]string{"TICKETD_ADMIN_TOKEN": "t"}, []string{"queue", "ev_room"}, 502, "<html>Bad Gateway</html>", 1, "502 Bad Gateway from "},
	} {
		srv, got := adminServer(t, tc.status, tc.body)
		vars := map[string]string{"TICKETD_URL": srv.URL}
		for k, v := range tc.vars {
			vars[k] = v
		}
		r := ticketctl(vars, "", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.wantsStderr) || r.stdout != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.name, r.code, r.stdout, r.stderr, tc.code, tc.wantsStderr)
		}
		if tc.code == 2 && len(got()) != 0 {
			t.Errorf("%s: bad usage reached the server", tc.name)
		}
	}
}

// TestQueueAgainstTicketd runs ticketctl queue against a ticketd whose
// room two buyers joined, and on an event without a room.
func TestQueueAgainstTicketd(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	t0 := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	s.Apply(t, []byte(fmt.Sprintf(`{"tenants": [{"id": "t_shop", "name": "Shop Host",
  "publishableKeys": [{"key": "pk_shop", "domains": ["shop.example.com"], "enabled": true}],
  "events": [
   {"id": "ctl_room", "shortId": "ctlr1", "slug": "room", "name": "Room", "startsAt": "2099-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [],
    "tickets": [{"id": "tk", "name": "Entry", "price": 20, "capacity": 1}],
    "waitingRoom": {"opensAt": %q, "salesStartAt": %q, "mode": "fifo"}},
   {"id": "ctl_plain", "shortId": "ctlp1", "slug": "plain", "name": "Plain", "startsAt": "2099-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [], "tickets": [{"id": "tk", "name": "Entry", "price": 20, "capacity": 1}]}
  ]}], "channels": []}`, past, t0)))
	for _, email := range []string{"ann@example.com", "bob@example.com"} {
		if r := s.Front(t, "POST", "/queue/ctl_room/join", map[string]any{"email": email}); r.Status != 200 {
			t.Fatalf("join: %s", r)
		}
	}
	vars := map[string]string{"TICKETD_URL": s.URL, "TICKETD_ADMIN_TOKEN": servertest.AdminToken}
	r := ticketctl(vars, "", "queue", "ctl_room")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	for _, line := range []string{"mode            fifo\n", "stock           1\n", "arrivals        2\n",
		"waiting         1 places, 1 tickets\n", "live passes     1, holding 1 tickets\n", "admitted        1 (the frontier)\n",
		"conversion      - (no pass ended yet)\n"} {
		if !strings.Contains(r.stdout, line) {
			t.Errorf("no line %q in\n%s", line, r.stdout)
		}
	}
	if r := ticketctl(vars, "", "queue", "ctl_plain"); r.code != 1 || !strings.Contains(r.stderr, "event ctl_plain has no waiting room") {
		t.Fatalf("no room: exit %d, stderr %q", r.code, r.stderr)
	}
	// the audit: ann's pass given, a line
	r = ticketctl(vars, "", "queue", "-audit", "ctl_room")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); r.code != 0 || len(lines) != 1 ||
		!strings.Contains(lines[0], "\tadmitted\t") || !strings.Contains(lines[0], "\t1\trank ") {
		t.Fatalf("audit: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
