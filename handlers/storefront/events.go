package storefront

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/handlers/views"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/capacity"
	"github.com/ticketd/ticketd/inventory/catalog"
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

func (a *API) onSale(ev *catalog.CompiledEvent) bool { return ev.SaleStarted(time.Now()) }

// eventView is the storefront event (interface.md leaves its fields open):
// what a host's page renders, tickets first among them.
type eventView struct {
	ID        string         `json:"id"`
	ShortID   string         `json:"shortId"`
	Slug      string         `json:"slug"`
	Name      string         `json:"name"`
	StartsAt  string         `json:"startsAt"`
	OnSaleAt  string         `json:"onSaleAt,omitempty"`
	Available bool           `json:"available"`
	Currency  string         `json:"currency"`
	Seated    bool           `json:"seated"`
	Tickets   []views.Ticket `json:"tickets"`
	views.Parts
	// Remaining is what the event cap leaves, when it has one.
	Remaining *int64 `json:"remaining,omitempty"`
}

// view renders ev with what remains (capacity field -> left, as
// orders.Remaining answers). Hidden tickets are listed only with their
// access code, as on the partner detail.
func (a *API) view(ev *catalog.CompiledEvent, accessCode string, remaining map[string]int64) eventView {
	v := eventView{ID: ev.ID, ShortID: ev.ShortID, Slug: ev.Slug, Name: ev.Name, StartsAt: ev.StartsAt,
		OnSaleAt: ev.OnSaleAt, Available: a.onSale(ev), Currency: "USD", Seated: ev.Seated(),
		Tickets: views.TicketsOf(ev, accessCode, remaining), Parts: views.PartsOf(ev, remaining), Remaining: views.Left(remaining, capacity.Event)}
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
