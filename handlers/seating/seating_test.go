package seating

import (
	"context"
	"testing"
	"time"

	"github.com/fasthttp/router"
	json "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/inventory/seats"
)

// surface mounts the seat endpoints as a surface would: under its prefix,
// with a gate that resolves the event from the catalog and, for callers
// sending header "X-Owner", gives them an owned token (a partner buyer
// session); others name their own (a keyed partner, the storefront).
type surface struct {
	r      *router.Router
	events map[string]*catalog.CompiledEvent
}

func newSurface(t *testing.T) *surface {
	t.Helper()
	rc, sp := redistest.New(t)
	price := money.Cents(4000)
	snap, err := catalog.Compile(1, []catalog.Tenant{{ID: "t1", Events: []catalog.Event{
		{ID: "ev_seated", Status: catalog.StatusOnSale, SeatMap: &catalog.SeatMap{
			Categories: []catalog.Category{{ID: "stalls", Name: "Stalls", Price: &price}},
			Rows:       []catalog.Row{{Label: "A", Seats: 10, Category: "stalls"}},
		}},
		{ID: "ev_ga", Status: catalog.StatusOnSale, Tickets: []catalog.Ticket{{ID: "tk", Price: 100, Capacity: 10}}},
	}}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &surface{r: router.New(), events: snap.Events}
	eng := &seats.Engine{Redis: rc, Space: sp, TTL: time.Minute, MaxTTL: 5 * time.Minute}
	Mount(s.r.Group("/v1/test/seating/events/{id}"), eng, func(ep Endpoint, h Handler) fasthttp.RequestHandler {
		return func(ctx *fasthttp.RequestCtx) {
			id, _ := ctx.UserValue("id").(string)
			ev := s.events[id]
			if ev == nil {
				httpx.Fail(ctx, apierr.Of("EVENT_NOT_FOUND", "no such event"))
				return
			}
			r := Request{Ctx: context.Background(), Event: ev}
			if owner := ctx.Request.Header.Peek("X-Owner"); len(owner) > 0 {
				r.OwnToken = "own" + string(owner) + ev.ID[3:]
			}
			h(ctx, r)
		}
	})
	return s
}

type reply struct {
	status int
	Code   string         `json:"code"`
	Data   map[string]any `json:"data"`
}

func (s *surface) call(t *testing.T, method, path, owner string, body any) reply {
	t.Helper()
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(method)
	ctx.Request.SetRequestURI("/v1/test/seating/events/" + path)
	if owner != "" {
		ctx.Request.Header.Set("X-Owner", owner)
	}
	if body != nil {
		b, _ := json.Marshal(body)
		ctx.Request.Header.SetContentType("application/json")
		ctx.Request.SetBody(b)
	}
	s.r.Handler(&ctx)
	var r reply
	if err := json.Unmarshal(ctx.Response.Body(), &r); err != nil {
		t.Fatalf("%s %s: %v: %s", method, path, err, ctx.Response.Body())
	}
	r.status = ctx.Response.StatusCode()
	return r
}

func (r reply) want(t *testing.T, status int, code string) reply {
	t.Helper()
	if r.status != status || r.Code != code {
		t.Fatalf("got %d %q (%v), want %d %q", r.status, r.Code, r.Data, status, code)
	}
	return r
}

// TestCallerNamesItsToken: with no owned token (storefront, keyed partner)
// a caller takes a token from hold-token and names it; a held seat is
// nobody else's; a missing or malformed token is refused before Redis.
func TestCallerNamesItsToken(t *testing.T) {
	t.Parallel()
	s := newSurface(t)
	tok, _ := s.call(t, "POST", "ev_seated/hold-token", "", nil).want(t, 200, "").Data["holdToken"].(string)
	if !seats.ValidToken(tok) {
		t.Fatalf("hold-token gave %q", tok)
	}
	h := s.call(t, "POST", "ev_seated/hold", "", map[string]any{"holdToken": tok, "seatLabels": []string{"A-1"}}).want(t, 200, "")
	if h.Data["holdToken"] != tok || h.Data["subtotal"] != float64(40) {
		t.Fatalf("hold: %v", h.Data)
	}
	other, _ := s.call(t, "POST", "ev_seated/hold-token", "", nil).Data["holdToken"].(string)
	s.call(t, "POST", "ev_seated/hold", "", map[string]any{"holdToken": other, "seatLabels": []string{"A-1"}}).want(t, 409, "SEAT_CONFLICT")
	s.call(t, "POST", "ev_seated/hold", "", map[string]any{"seatLabels": []string{"A-2"}}).want(t, 400, "INVALID_REQUEST")
	s.call(t, "POST", "ev_seated/hold", "", map[string]any{"holdToken": "Bad{x}", "seatLabels": []string{"A-2"}}).want(t, 400, "INVALID_HOLD_TOKEN")
	s.call(t, "POST", "ev_seated/hold/"+tok+"/extend", "", nil).want(t, 200, "")
	rel := s.call(t, "POST", "ev_seated/release", "", map[string]any{"holdToken": tok, "seatLabels": []string{"A-1"}}).want(t, 200, "")
	if got, _ := rel.Data["released"].([]any); len(got) != 1 || got[0] != "A-1" {
		t.Fatalf("released %v", rel.Data)
	}
	s.call(t, "POST", "ev_seated/hold", "", map[string]any{"holdToken": other, "seatLabels": []string{"A-1"}}).want(t, 200, "")
}

// TestOwnedToken: a caller that owns a token (a partner buyer session)
// holds without taking one first, gets its own from hold-token, and cannot
// act on another's token.
func TestOwnedToken(t *testing.T) {
	t.Parallel()
	s := newSurface(t)
	h := s.call(t, "POST", "ev_seated/hold", "alice", map[string]any{"seatLabels": []string{"A-3"}}).want(t, 200, "")
	own, _ := h.Data["holdToken"].(string)
	if got := s.call(t, "POST", "ev_seated/hold-token", "alice", nil).want(t, 200, "").Data["holdToken"]; got != own {
		t.Fatalf("hold-token gave %v, the hold used %q", got, own)
	}
	bob, _ := s.call(t, "POST", "ev_seated/hold", "bob", map[string]any{"seatLabels": []string{"A-4"}}).want(t, 200, "").Data["holdToken"].(string)
	s.call(t, "POST", "ev_seated/release", "alice", map[string]any{"holdToken": bob, "seatLabels": []string{"A-4"}}).want(t, 400, "INVALID_HOLD_TOKEN")
	s.call(t, "POST", "ev_seated/hold/"+bob+"/extend", "alice", nil).want(t, 400, "INVALID_HOLD_TOKEN")
}

// TestReadsAndUnseated: config and availability read the map; an event
// without one is NOT_SEATED on every endpoint.
func TestReadsAndUnseated(t *testing.T) {
	t.Parallel()
	s := newSurface(t)
	s.call(t, "GET", "ev_seated/config", "", nil).want(t, 200, "")
	s.call(t, "GET", "ev_seated/availability", "", nil).want(t, 200, "")
	for _, p := range []string{"config", "availability"} {
		s.call(t, "GET", "ev_ga/"+p, "", nil).want(t, 400, "NOT_SEATED")
	}
	for _, p := range []string{"hold-token", "hold", "release", "hold/abcdefgh/extend"} {
		s.call(t, "POST", "ev_ga/"+p, "", map[string]any{"holdToken": "abcdefgh", "seatLabels": []string{"A-1"}}).want(t, 400, "NOT_SEATED")
	}
}

// Gates pick the read or write class and scope by Writes: the hold read
// must read, or a partner key with catalog:read only could not reload.
func TestOnlyHoldChangingEndpointsWrite(t *testing.T) {
	for ep, want := range map[Endpoint]bool{Config: false, Availability: false, HoldRead: false,
		HoldToken: true, Hold: true, Extend: true, Release: true, BestAvailable: true} {
		if ep.Writes() != want {
			t.Errorf("endpoint %d writes = %v, want %v", ep, ep.Writes(), want)
		}
	}
}
