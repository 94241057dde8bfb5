package admin_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ticketd/ticketd/handlers/admin"
	"github.com/ticketd/ticketd/handlers/servertest"
)

// roomCatalog has ad_room, a GA event of 2 tickets sold through a first
// come waiting room whose T0 passed, and ad_plain, sold without one.
func roomCatalog() string {
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	soon := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	return fmt.Sprintf(`{"tenants": [{"id": "t_shop", "name": "Shop Host",
  "publishableKeys": [{"key": "pk_shop", "domains": ["shop.example.com"], "enabled": true}],
  "events": [
   {"id": "ad_room", "shortId": "adrm1", "slug": "room", "name": "Room", "startsAt": "2099-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [],
    "tickets": [{"id": "tk", "name": "Entry", "price": 20, "capacity": 2}],
    "waitingRoom": {"opensAt": %q, "salesStartAt": %q, "mode": "fifo", "perBuyer": 2, "passTtl": 300}},
   {"id": "ad_plain", "shortId": "adpl1", "slug": "plain", "name": "Plain", "startsAt": "2099-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [],
    "tickets": [{"id": "tk", "name": "Entry", "price": 20, "capacity": 5}]}
  ]}], "channels": []}`, past, soon)
}

func getQueue(t *testing.T, s *servertest.Server, token, event string) *servertest.Response {
	t.Helper()
	h := map[string]string{}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	return s.Do(t, "GET", "/v1/admin/events/"+event+"/queue", h, nil)
}

func readQueue(t *testing.T, s *servertest.Server, event string) admin.QueueView {
	t.Helper()
	r := getQueue(t, s, servertest.AdminToken, event)
	if r.Status != 200 {
		t.Fatalf("queue of %s: %s", event, r)
	}
	var v admin.QueueView
	r.Decode(t, &v)
	return v
}

type joined struct {
	State string `json:"state"`
	Pass  string `json:"pass"`
}

func joinRoom(t *testing.T, s *servertest.Server, email string) joined {
	t.Helper()
	r := s.Front(t, "POST", "/queue/ad_room/join", map[string]any{"email": email})
	if r.Status != 200 {
		t.Fatalf("join as %s: %s", email, r)
	}
	var j joined
	r.Decode(t, &j)
	return j
}

// TestQueueRead reads a waiting room over HTTP as joins, a registration
// with a pass move it; the same figures reach /metrics. An event without
// a room, an unknown event and a caller without the token are refused.
func TestQueueRead(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	s.Apply(t, []byte(roomCatalog()))

	v := readQueue(t, s, "ad_room")
	wantRoom := admin.RoomSettings{PassTTL: 300, PerBuyer: 2, Mode: "fifo", Stock: 2,
		OpensAt: v.Room.OpensAt, SalesStartAt: v.Room.SalesStartAt}
	if v.EventID != "ad_room" || v.Room != wantRoom || v.Room.OpensAt == "" || v.Room.SalesStartAt == "" {
		t.Fatalf("settings: %+v, want %+v", v, wantRoom)
	}
	if v.Stats != (admin.QueueStats{}) {
		t.Fatalf("an empty room: %+v", v.Stats)
	}

	ann := joinRoom(t, s, "ann@example.com")
	joinRoom(t, s, "bob@example.com")
	if cat := joinRoom(t, s, "cat@example.com"); cat.State != "waiting" || ann.State != "admitted" || ann.Pass == "" {
		t.Fatalf("joins: ann %+v, cat %+v: want ann admitted, cat waiting", ann, cat)
	}
	v = readQueue(t, s, "ad_room")
	want := admin.QueueStats{Arrivals: 3, Waiting: 1, WaitingUnits: 1, Reserved: 2, LivePasses: 2, Admitted: 2}
	if v.Stats != want {
		t.Fatalf("after three joins: %+v, want %+v", v.Stats, want)
	}
	// The read admits no one and changes nothing.
	if again := readQueue(t, s, "ad_room"); again.Stats != want {
		t.Fatalf("read again: %+v, want %+v", again.Stats, want)
	}

	// Ann's pass makes her registration: used, her ticket leaves the
	// passes' reserve.
	r := s.Do(t, "POST", "/v1/storefront/register-guest", servertest.With(servertest.Shop(), "x-queue-pass", ann.Pass),
		servertest.Guest("ad_room", map[string]any{"selectedTicketId": "tk", "email": "ann@example.com"}))
	if r.Status != 200 {
		t.Fatalf("register with the pass: %s", r)
	}
	v = readQueue(t, s, "ad_room")
	if v.Stats.Used != 1 || v.Stats.LivePasses != 1 || v.Stats.Reserved != 1 || v.Stats.Admitted != 2 ||
		v.Stats.Conversion == nil || *v.Stats.Conversion != 1 {
		t.Fatalf("after a registration with a pass: %+v", v.Stats)
	}

	// The audit: both passes given, in order, and ann's used; read in two
	// pages.
	audit := func(query string) *servertest.Response {
		return s.Do(t, "GET", "/v1/admin/events/ad_room/queue/audit"+query, map[string]string{"Authorization": "Bearer " + servertest.AdminToken}, nil)
	}
	var page admin.AuditView
	r = audit("?count=2")
	if r.Status != 200 {
		t.Fatalf("audit: %s", r)
	}
	r.Decode(t, &page)
	if len(page.Entries) != 2 || page.Entries[0].What != "admitted" || page.Entries[1].What != "admitted" ||
		page.Entries[0].Rank == "" || page.Entries[0].Units != 1 || page.Next != page.Entries[1].ID {
		t.Fatalf("audit's first page: %+v", page)
	}
	first := page.Entries[0].QueueID
	r = audit("?after=" + page.Next)
	r.Decode(t, &page)
	if len(page.Entries) != 1 || page.Entries[0].What != "used" || page.Entries[0].QueueID != first {
		t.Fatalf("audit after the passes: %+v, want ann's pass used", page)
	}
	for _, q := range []string{"?count=0", "?count=x", "?count=10001", "?after=nope"} {
		if r := audit(q); r.Status != 400 || r.Code != "INVALID_REQUEST" {
			t.Fatalf("audit%s: %s, want 400 INVALID_REQUEST", q, r)
		}
	}

	// /metrics shows the same.
	mfs := scrapeMetrics(t, s)
	for name, w := range map[string]float64{
		"ticketd_room_waiting_places": 1, "ticketd_room_waiting_units": 1, "ticketd_room_reserved_units": 1,
		"ticketd_room_live_passes": 1, "ticketd_room_arrivals_total": 3, "ticketd_room_admitted_total": 2,
		"ticketd_room_passes_used_total": 1, "ticketd_room_passes_lapsed_total": 0, "ticketd_room_pass_conversion": 1,
	} {
		if got, ok := metricValue(mfs, name, "ad_room"); !ok || got != w {
			t.Errorf("%s{event=\"ad_room\"} = %v (present %v), want %v", name, got, ok, w)
		}
	}
	if _, ok := metricValue(mfs, "ticketd_room_waiting_places", "ad_plain"); ok {
		t.Error("/metrics shows a room for an event without one")
	}

	r = getQueue(t, s, servertest.AdminToken, "ad_plain")
	if r.Status != 404 || r.Code != "NO_WAITING_ROOM" || !strings.Contains(r.Message, "no waiting room") || r.Raw["eventId"] != "ad_plain" {
		t.Fatalf("event without a room: %s, want 404 NO_WAITING_ROOM", r)
	}
	if r := getQueue(t, s, servertest.AdminToken, "ad_none"); r.Status != 404 || r.Code != "EVENT_NOT_FOUND" {
		t.Fatalf("unknown event: %s, want 404 EVENT_NOT_FOUND", r)
	}
	if r := getQueue(t, s, "", "ad_room"); r.Status != 401 || r.Code != "ADMIN_UNAUTHORIZED" {
		t.Fatalf("no token: %s", r)
	}
	if r := getQueue(t, s, "wrong", "ad_room"); r.Status != 401 || r.Code != "ADMIN_UNAUTHORIZED" {
		t.Fatalf("wrong token: %s", r)
	}
}

func scrapeMetrics(t *testing.T, s *servertest.Server) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d %v", resp.StatusCode, err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return mfs
}

// metricValue is the value of family name's series for event.
func metricValue(mfs map[string]*dto.MetricFamily, name, event string) (float64, bool) {
	for _, m := range mfs[name].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "event" && lp.GetValue() == event {
				if c := m.GetCounter(); c != nil {
					return c.GetValue(), true
				}
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// A multi-showing event's lines are read one at a time, named by
// ?showingId= (required there, refused elsewhere), and /metrics shows each
// with its showing.
func TestQueueReadOfAShowingsLine(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	soon := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	s.Apply(t, []byte(fmt.Sprintf(`{"tenants": [{"id": "t_shop", "name": "Shop Host",
  "publishableKeys": [{"key": "pk_shop", "domains": ["shop.example.com"], "enabled": true}],
  "events": [
   {"id": "ad_shows", "shortId": "adsh1", "slug": "shows", "name": "Two Nights", "startsAt": "2099-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [],
    "showings": [{"id": "sh_a", "startsAt": "2099-07-01T18:00:00Z", "capacity": 1},
                 {"id": "sh_b", "startsAt": "2099-07-02T18:00:00Z", "capacity": 3}],
    "tickets": [{"id": "tk", "name": "Entry", "price": 20, "capacity": 4}],
    "waitingRoom": {"opensAt": %q, "salesStartAt": %q, "mode": "fifo"}},
   {"id": "ad_room", "shortId": "adrm1", "slug": "room", "name": "Room", "startsAt": "2099-07-01T18:00:00Z",
    "status": "on_sale", "storefront": true, "channels": [],
    "tickets": [{"id": "tk", "name": "Entry", "price": 20, "capacity": 2}],
    "waitingRoom": {"opensAt": %q, "salesStartAt": %q}}
  ]}], "channels": []}`, past, soon, past, soon)))
	for _, email := range []string{"ann@example.com", "bob@example.com"} {
		if r := s.Front(t, "POST", "/queue/ad_shows/join", map[string]any{"email": email, "showingId": "sh_a"}); r.Status != 200 {
			t.Fatalf("join sh_a as %s: %s", email, r)
		}
	}
	tok := map[string]string{"Authorization": "Bearer " + servertest.AdminToken}
	read := func(path string) admin.QueueView {
		t.Helper()
		r := s.Do(t, "GET", path, tok, nil)
		if r.Status != 200 {
			t.Fatalf("%s: %s", path, r)
		}
		var v admin.QueueView
		r.Decode(t, &v)
		return v
	}
	a := read("/v1/admin/events/ad_shows/queue?showingId=sh_a")
	if a.EventID != "ad_shows" || a.ShowingID != "sh_a" || a.Room.Stock != 1 ||
		a.Stats != (admin.QueueStats{Arrivals: 2, Waiting: 1, WaitingUnits: 1, Reserved: 1, LivePasses: 1, Admitted: 1}) {
		t.Fatalf("sh_a's line: %+v, want stock 1, one admitted and one waiting", a)
	}
	if b := read("/v1/admin/events/ad_shows/queue?showingId=sh_b"); b.ShowingID != "sh_b" || b.Room.Stock != 3 || b.Stats != (admin.QueueStats{}) {
		t.Fatalf("sh_b's line: %+v, want stock 3 and nobody", b)
	}
	r := s.Do(t, "GET", "/v1/admin/events/ad_shows/queue/audit?showingId=sh_a", tok, nil)
	var page admin.AuditView
	r.Decode(t, &page)
	if page.ShowingID != "sh_a" || len(page.Entries) != 1 || page.Entries[0].What != "admitted" {
		t.Fatalf("sh_a's audit: %s, want ann's pass given", r)
	}
	for _, c := range []struct{ path, code string }{
		{"/v1/admin/events/ad_shows/queue", "SHOWING_REQUIRED"},
		{"/v1/admin/events/ad_shows/queue/audit", "SHOWING_REQUIRED"},
		{"/v1/admin/events/ad_shows/queue?showingId=sh_c", "SHOWING_NOT_FOUND"},
		{"/v1/admin/events/ad_room/queue?showingId=sh_a", "SHOWING_NOT_FOUND"},
		{"/v1/admin/events/ad_room/queue/audit?showingId=sh_a", "SHOWING_NOT_FOUND"},
	} {
		if r := s.Do(t, "GET", c.path, tok, nil); r.Status != 400 || r.Code != c.code {
			t.Errorf("%s: %s, want 400 %s", c.path, r, c.code)
		}
	}

	mfs := scrapeMetrics(t, s)
	lines := map[string]float64{}
	for _, m := range mfs["ticketd_room_waiting_places"].GetMetric() {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		lines[l["event"]+"/"+l["showing"]] = m.GetGauge().GetValue()
	}
	if len(lines) != 3 || lines["ad_shows/sh_a"] != 1 || lines["ad_shows/sh_b"] != 0 || lines["ad_room/"] != 0 {
		t.Fatalf("ticketd_room_waiting_places by event/showing: %v, want sh_a 1, sh_b 0 and ad_room's own", lines)
	}
}
