package storefront

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/handlers/views"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/capacity"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/payments"
	"github.com/ticketd/ticketd/inventory/tickets"
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
// only) to an event switched on for the storefront (Switched).
func (a *API) event(r *request, ref string) (*catalog.CompiledEvent, *apierr.Error) {
	ev := r.ix.tenants[r.tenantID].find(ref)
	if e := Switched(ev); e != nil {
		return nil, e
	}
	return ev, nil
}

// Switched is the storefront's rule for an event found in the caller's
// tenant (nil when none was): not a draft, switched on for the storefront,
// not cancelled. Drafts are not found; cancelled events and events the
// host has not switched on are EVENT_NOT_PUBLIC. Whether sales have
// started is OnSale's question, asked of writes only. ticketd's seat
// picker (handlers/picker) applies the same rules.
func Switched(ev *catalog.CompiledEvent) *apierr.Error {
	if ev == nil || ev.Status == catalog.StatusDraft {
		return errEventNotFound
	}
	if !ev.Storefront {
		return errNotPublic
	}
	if ev.Status == catalog.StatusCancelled {
		return errCancelled
	}
	return nil
}

// saleable additionally refuses an event not on sale yet (OnSale).
func (a *API) saleable(r *request, ref string) (*catalog.CompiledEvent, *apierr.Error) {
	ev, e := a.event(r, ref)
	if e == nil {
		e = views.OnSale(ev, time.Now())
	}
	if e != nil {
		return nil, e
	}
	return ev, nil
}

// eventDetail is GET /v1/storefront/events/:eventId.
func (a *API) eventDetail(ctx *fasthttp.RequestCtx, r *request) {
	ref, _ := ctx.UserValue("eventId").(string)
	ev, e := a.event(r, ref)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	// What the storefront can sell: the room's stock, beside partners' allocations.
	remaining, err := a.Orders.Remaining(r.ctx, ev.ID, capacity.Storefront)
	if err != nil {
		httpx.Error(ctx, err)
		return
	}
	httpx.OK(ctx, eventView{Event: views.EventOf(ev, string(ctx.QueryArgs().Peek("accessCode")), remaining, time.Now()),
		PaymentMethods: a.paymentMethods(), TestMode: a.TestMode, WaitingRoom: roomViewOf(ev.Room)})
}

// roomView tells a host's site that the event sells through a waiting
// room (catalog waitingRoom), so that its page queues the buyer first
// (POST /v1/storefront/queue/{eventId}/join) rather than offering tickets
// that register-guest would refuse with QUEUE_REQUIRED.
type roomView struct {
	OpensAt      string `json:"opensAt"`
	SalesStartAt string `json:"salesStartAt"`
	Mode         string `json:"mode"`
	PerBuyer     int64  `json:"perBuyer"`
	// ProofOfWork says each join must carry a solved challenge
	// (POST .../queue/{eventId}/challenge).
	ProofOfWork bool `json:"proofOfWork,omitempty"`
}

func roomViewOf(r *catalog.Room) *roomView {
	if r == nil {
		return nil
	}
	return &roomView{OpensAt: r.OpensAt.UTC().Format(time.RFC3339), SalesStartAt: r.SalesStartAt.UTC().Format(time.RFC3339),
		Mode: r.Mode(), PerBuyer: r.PerBuyer, ProofOfWork: r.Work != nil}
}

// eventView is the storefront's event detail: the detail both surfaces
// show, and what the host's site needs to offer payment (the partner
// surface takes no payment through ticketd).
type eventView struct {
	views.Event
	// PaymentMethods are the methods a registration can be paid with here,
	// "card" and "wallet"; [] when none is (a free registration needs
	// none).
	PaymentMethods []string `json:"paymentMethods"`
	// TestMode says payments are simulated.
	TestMode bool `json:"testMode,omitempty"`
	// WaitingRoom is set when the event sells through a waiting room.
	WaitingRoom *roomView `json:"waitingRoom,omitempty"`
}

// paymentMethods are the methods a processor takes on this deployment.
func (a *API) paymentMethods() []string {
	out := make([]string, 0, 2)
	if a.Card != nil {
		out = append(out, payments.Card)
	}
	if a.Wallet != nil {
		out = append(out, payments.Wallet)
	}
	return out
}

// ticketKey is GET /v1/storefront/events/:eventId/ticket-key: the public
// key door scanners verify the event's ticket QR codes with, offline
// (docs/tickets.md).
func (a *API) ticketKey(ctx *fasthttp.RequestCtx, r *request) {
	ref, _ := ctx.UserValue("eventId").(string)
	ev, e := a.event(r, ref)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	if a.Tickets == nil {
		httpx.Fail(ctx, apierr.Of("NOT_FOUND", "this node issues no signed tickets"))
		return
	}
	httpx.OK(ctx, map[string]string{"eventId": ev.ID, "algorithm": "Ed25519", "format": tickets.Version,
		"publicKey": a.Tickets.PublicKey(ev.ID)})
}
