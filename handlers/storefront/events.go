package storefront

import (
	json "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/money"
)

var (
	// errEventNotFound is the one answer for an unknown event, another
	// tenant's and a draft: the same bytes, so a key cannot learn what
	// exists outside its tenant.
	errEventNotFound = apierr.Of("EVENT_NOT_FOUND", "no such event for this key")
	errNotPublic     = apierr.Of("EVENT_NOT_PUBLIC", "this event is not switched on for the storefront")
	errCancelled     = apierr.Of("EVENT_NOT_PUBLIC", "the organiser cancelled this event").WithReason("cancelled")
)

// event resolves ref (an id, shortId or slug, within the key's tenant
// only) to an event switched on for the storefront: storefront true and
// on sale. Drafts are not found; cancelled events and events the host
// has not switched on are EVENT_NOT_PUBLIC.
func (a *API) event(r *request, ref string) (*catalog.CompiledEvent, *apierr.Error) {
	ev := r.ix.tenants[r.tenantID].find(ref)
	if ev == nil || ev.Status == catalog.StatusDraft {
		return nil, errEventNotFound
	}
	if !ev.Storefront {
		return nil, errNotPublic
	}
	if ev.Status == catalog.StatusCancelled {
		return nil, errCancelled
	}
	return ev, nil
}

// saleable additionally refuses an event not on sale yet (onSaleAt in the
// future): the detail shows it, but nothing can be quoted or bought.
func (a *API) saleable(r *request, ref string) (*catalog.CompiledEvent, *apierr.Error) {
	ev, e := a.event(r, ref)
	if e != nil {
		return nil, e
	}
	if !a.onSale(ev) {
		return nil, apierr.Of("EVENT_NOT_AVAILABLE", "not on sale yet; on sale from %s", ev.OnSaleAt).With("onSaleAt", ev.OnSaleAt)
	}
	return ev, nil
}

func (a *API) onSale(ev *catalog.CompiledEvent) bool {
	return ev.OnSale.IsZero() || !a.now().Before(ev.OnSale)
}

// eventView is the storefront event (interface.md leaves its fields open):
// what a host's page renders, tickets first among them.
type eventView struct {
	ID               string        `json:"id"`
	ShortID          string        `json:"shortId"`
	Slug             string        `json:"slug"`
	Name             string        `json:"name"`
	StartsAt         string        `json:"startsAt"`
	OnSaleAt         string        `json:"onSaleAt,omitempty"`
	Available        bool          `json:"available"`
	Currency         string        `json:"currency"`
	Seated           bool          `json:"seated"`
	Tickets          []ticketView  `json:"tickets"`
	Showings         []showingView `json:"showings,omitempty"`
	Extras           []extraView   `json:"extras,omitempty"`
	RefundProtection *refundOffer  `json:"refundProtection,omitempty"`
	SeatMap          *seatSummary  `json:"seatMap,omitempty"`
	// Remaining is what the event cap leaves, when it has one.
	Remaining *int64 `json:"remaining,omitempty"`
}

type ticketView struct {
	ID          string      `json:"id"`
	Name        string      `json:"name"`
	Price       money.Cents `json:"price"`
	Currency    string      `json:"currency"`
	MaxPerOrder int64       `json:"maxPerOrder,omitempty"`
	// Remaining is what can still be bought: the ticket type's capacity
	// left, bounded by the event's.
	Remaining int64 `json:"remaining"`
	Available bool  `json:"available"`
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

type refundOffer struct {
	Percent json.Number `json:"percent"`
}

type seatSummary struct {
	Categories []categoryView `json:"categories"`
	Rows       int            `json:"rows"`
	Seats      int            `json:"seats"`
	GAAreas    []areaView     `json:"gaAreas,omitempty"`
	Tables     []string       `json:"tables,omitempty"`
}

type categoryView struct {
	ID    string       `json:"id"`
	Name  string       `json:"name"`
	Price *money.Cents `json:"price"`
}

type areaView struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Category  string `json:"category"`
	Remaining *int64 `json:"remaining,omitempty"`
}

// view renders ev with what remains (capacity field -> left, as
// orders.Remaining answers). Hidden tickets are listed only with their
// access code.
func (a *API) view(ev *catalog.CompiledEvent, accessCode string, remaining map[string]int64) eventView {
	left := func(field string) *int64 {
		if n, ok := remaining[field]; ok {
			n = max(n, 0)
			return &n
		}
		return nil
	}
	evLeft := left("ev")
	v := eventView{ID: ev.ID, ShortID: ev.ShortID, Slug: ev.Slug, Name: ev.Name, StartsAt: ev.StartsAt,
		OnSaleAt: ev.OnSaleAt, Available: a.onSale(ev), Currency: "USD", Seated: ev.Seated(),
		Tickets: []ticketView{}, Remaining: evLeft}
	for _, t := range ev.Event.Tickets {
		if t.Hidden && (accessCode == "" || accessCode != t.AccessCode) {
			continue
		}
		tv := ticketView{ID: t.ID, Name: t.Name, Price: t.Price, Currency: "USD", MaxPerOrder: t.MaxPerOrder, Remaining: t.Capacity}
		if n := left("t:" + t.ID); n != nil {
			tv.Remaining = *n
		}
		if evLeft != nil {
			tv.Remaining = min(tv.Remaining, *evLeft)
		}
		tv.Available = v.Available && tv.Remaining > 0
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
		ss := &seatSummary{Rows: len(sm.Rows), Categories: []categoryView{}}
		for _, c := range sm.Categories {
			ss.Categories = append(ss.Categories, categoryView{ID: c.ID, Name: c.Name, Price: c.Price})
		}
		for _, r := range sm.Rows {
			ss.Seats += r.Seats
		}
		for _, ar := range sm.GAAreas {
			ss.GAAreas = append(ss.GAAreas, areaView{ID: ar.ID, Name: ar.Name, Category: ar.Category, Remaining: left("a:" + ar.ID)})
		}
		for _, t := range sm.Tables {
			ss.Tables = append(ss.Tables, t.ID)
		}
		v.SeatMap = ss
	}
	return v
}

// eventDetail is GET /v1/storefront/events/:eventId.
func (a *API) eventDetail(ctx *fasthttp.RequestCtx, r *request) {
	ref, _ := ctx.UserValue("eventId").(string)
	ev, e := a.event(r, ref)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	remaining, err := a.Orders.Remaining(r.ctx, ev.ID)
	if err != nil {
		httpx.Error(ctx, err)
		return
	}
	httpx.OK(ctx, a.view(ev, string(ctx.QueryArgs().Peek("accessCode")), remaining))
}
