package channel

import (
	"sort"
	"strconv"

	json "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/capacity"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/money"
)

var (
	errEventNotFound = apierr.Of("EVENT_NOT_FOUND", "no such event in this channel's catalog")
	errCancelled     = apierr.Of("EVENT_CANCELLED", "the organiser cancelled this event")
)

// event returns the path's event if it is in the caller's catalog. Draft
// events and other channels' events are indistinguishable from missing ones.
func (a *API) event(ctx *fasthttp.RequestCtx, c *caller) (*catalog.CompiledEvent, *apierr.Error) {
	id, _ := ctx.UserValue("id").(string)
	ev := c.snap.Events[id]
	if ev == nil || ev.Status == catalog.StatusDraft || !listed(ev, c.Channel.ID) {
		return nil, errEventNotFound
	}
	return ev, nil
}

// saleable additionally refuses cancelled and embargoed events.
func (a *API) saleable(ctx *fasthttp.RequestCtx, c *caller) (*catalog.CompiledEvent, *apierr.Error) {
	ev, e := a.event(ctx, c)
	if e != nil {
		return nil, e
	}
	if ev.Status == catalog.StatusCancelled {
		return nil, errCancelled
	}
	if !ev.OnSale.IsZero() && a.now().Before(ev.OnSale) {
		return nil, apierr.Of("EVENT_NOT_AVAILABLE", "not on sale yet; on sale from %s", ev.OnSaleAt).With("onSaleAt", ev.OnSaleAt)
	}
	return ev, nil
}

func listed(ev *catalog.CompiledEvent, channelID string) bool {
	for _, c := range ev.Channels {
		if c == channelID {
			return true
		}
	}
	return false
}

type ticketView struct {
	ID          string      `json:"id"`
	Name        string      `json:"name"`
	Price       money.Cents `json:"price"`
	Currency    string      `json:"currency"`
	MaxPerOrder int64       `json:"maxPerOrder,omitempty"`
	Hidden      bool        `json:"hidden,omitempty"`
	Remaining   *int64      `json:"remaining,omitempty"`
	SoldOut     *bool       `json:"soldOut,omitempty"`
}

type showingView struct {
	ID        string `json:"id"`
	StartsAt  string `json:"startsAt"`
	Remaining *int64 `json:"remaining,omitempty"`
}

type extraView struct {
	ID        string      `json:"id"`
	Name      string      `json:"name"`
	Price     money.Cents `json:"price"`
	Remaining *int64      `json:"remaining,omitempty"`
}

type eventView struct {
	ID               string        `json:"id"`
	Name             string        `json:"name"`
	StartsAt         string        `json:"startsAt"`
	Status           string        `json:"status"`
	OnSaleAt         string        `json:"onSaleAt,omitempty"`
	Available        bool          `json:"available"`
	Currency         string        `json:"currency"`
	Seated           bool          `json:"seated"`
	Tickets          []ticketView  `json:"tickets"`
	Showings         []showingView `json:"showings,omitempty"`
	Extras           []extraView   `json:"extras,omitempty"`
	RefundProtection *refundOffer  `json:"refundProtection,omitempty"`
	SeatMap          *seatSummary  `json:"seatMap,omitempty"`
	Remaining        *int64        `json:"remaining,omitempty"`
}

type refundOffer struct {
	Percent json.Number `json:"percent"`
}

type seatSummary struct {
	Categories []categoryView `json:"categories"`
	Rows       int            `json:"rows"`
	Seats      int            `json:"seats"`
	GAAreas    []string       `json:"gaAreas,omitempty"`
	Tables     []string       `json:"tables,omitempty"`
}

type categoryView struct {
	ID    string       `json:"id"`
	Name  string       `json:"name"`
	Price *money.Cents `json:"price"`
}

// view renders an event for the caller; hidden tickets appear only with
// their access code. remaining, when not nil, maps capacity fields to what
// is left.
func (a *API) view(ev *catalog.CompiledEvent, accessCode string, remaining map[string]int64) eventView {
	v := eventView{ID: ev.ID, Name: ev.Name, StartsAt: ev.StartsAt, Status: ev.Status, OnSaleAt: ev.OnSaleAt,
		Currency: "USD", Seated: ev.Seated(), Tickets: []ticketView{}}
	v.Available = ev.Status == catalog.StatusOnSale && (ev.OnSale.IsZero() || !a.now().Before(ev.OnSale))
	left := func(field string) *int64 {
		if remaining == nil {
			return nil
		}
		if n, ok := remaining[field]; ok {
			return &n
		}
		return nil
	}
	for _, t := range ev.Event.Tickets {
		if t.Hidden && (accessCode == "" || accessCode != t.AccessCode) {
			continue
		}
		tv := ticketView{ID: t.ID, Name: t.Name, Price: t.Price, Currency: "USD", MaxPerOrder: t.MaxPerOrder,
			Hidden: t.Hidden}
		if n, ok := capacity.Ticket(remaining, t.ID); ok {
			tv.Remaining = &n
		}
		if tv.Remaining != nil {
			so := *tv.Remaining <= 0
			tv.SoldOut = &so
		}
		v.Tickets = append(v.Tickets, tv)
	}
	for _, s := range ev.Event.Showings {
		v.Showings = append(v.Showings, showingView{ID: s.ID, StartsAt: s.StartsAt, Remaining: left("sh:" + s.ID)})
	}
	for _, x := range ev.Event.Extras {
		v.Extras = append(v.Extras, extraView{ID: x.ID, Name: x.Name, Price: x.Price, Remaining: left("x:" + x.ID)})
	}
	if p := ev.Pricing.RefundProtectionPercent; p.IsPositive() {
		v.RefundProtection = &refundOffer{Percent: json.Number(p.String())}
	}
	if sm := ev.SeatMap; sm != nil {
		ss := &seatSummary{Rows: len(sm.Rows)}
		for _, c := range sm.Categories {
			ss.Categories = append(ss.Categories, categoryView{ID: c.ID, Name: c.Name, Price: c.Price})
		}
		for _, r := range sm.Rows {
			ss.Seats += r.Seats
		}
		for _, ar := range sm.GAAreas {
			ss.GAAreas = append(ss.GAAreas, ar.ID)
		}
		for _, t := range sm.Tables {
			ss.Tables = append(ss.Tables, t.ID)
		}
		v.SeatMap = ss
	}
	v.Remaining = left(capacity.Event)
	return v
}

const maxPage = 100

// listEvents is GET /v1/channel/events: the channel's catalog, paged by
// event id (query limit, cursor). Query id= returns one event's detail.
func (a *API) listEvents(ctx *fasthttp.RequestCtx, c *caller) {
	args := ctx.QueryArgs()
	if id := args.Peek("id"); len(id) > 0 {
		ctx.SetUserValue("id", string(id))
		a.eventDetail(ctx, c)
		return
	}
	limit := 50
	if l := args.Peek("limit"); len(l) > 0 {
		n, err := strconv.Atoi(string(l))
		if err != nil || n < 1 || n > maxPage {
			httpx.Fail(ctx, apierr.Invalid("limit must be an integer from 1 to %d", maxPage))
			return
		}
		limit = n
	}
	cursor := string(args.Peek("cursor"))
	all := c.snap.ChannelEvents[c.Channel.ID]
	start := sort.Search(len(all), func(i int) bool { return all[i].ID > cursor })
	out := make([]eventView, 0, limit)
	next := ""
	for i := start; i < len(all); i++ {
		ev := all[i]
		if ev.Status != catalog.StatusOnSale {
			continue
		}
		if len(out) == limit {
			next = out[len(out)-1].ID
			break
		}
		out = append(out, a.view(ev, "", nil))
	}
	data := map[string]any{"events": out}
	if next != "" {
		data["nextCursor"] = next
	}
	httpx.OK(ctx, data)
}

// eventDetail is GET /v1/channel/events/:id: tickets with what remains.
func (a *API) eventDetail(ctx *fasthttp.RequestCtx, c *caller) {
	ev, e := a.event(ctx, c)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	if ev.Status == catalog.StatusCancelled {
		httpx.Fail(ctx, errCancelled)
		return
	}
	remaining, err := a.Orders.Remaining(c.ctx, ev.ID)
	if err != nil {
		httpx.Error(ctx, err)
		return
	}
	httpx.OK(ctx, a.view(ev, string(ctx.QueryArgs().Peek("accessCode")), remaining))
}
