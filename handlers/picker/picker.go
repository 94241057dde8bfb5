// Package picker serves ticketd's own seat picker (issue 10;
// docs/decisions.md, Seat picker): the page a host's site embeds as an
// iframe at /events/{slug}/{shortId}/seatmap?app=storefront, its script
// and style under /assets/picker/, and the seat endpoints the page calls,
// /v1/picker/seating/events/{id}/... (handlers/seating), authenticated by
// a short-lived token the page carries instead of a publishable key.
package picker

import (
	"log/slog"
	"time"

	"github.com/fasthttp/router"

	"github.com/ticketd/ticketd/handlers/clientip"
	"github.com/ticketd/ticketd/handlers/ratelimit"
	"github.com/ticketd/ticketd/handlers/seating"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/holds"
	"github.com/ticketd/ticketd/inventory/room"
	"github.com/ticketd/ticketd/inventory/seats"
)

// Prefix is the path prefix of the picker's seat endpoints.
const Prefix = "/v1/picker"

// Picker holds the dependencies of the seat picker's page and API.
type Picker struct {
	Catalog func() *catalog.Snapshot
	Seats   *seats.Engine
	// Key signs the page's tokens; derived from TICKETD_SECRETS_KEY, so a
	// token minted by one node is good on every node.
	Key      []byte
	Limiter  *ratelimit.Limiter
	ClientIP *clientip.Resolver
	// Holds counts the hold tokens (with the registrations awaiting
	// payment) of one client IP per event, as on the storefront; the zero
	// value counts none.
	Holds holds.Policy
	// Gate, when set, says whether sales run: nil, or the 503 to answer
	// (redisstate.Monitor.Gate), as on the storefront.
	Gate func() *apierr.Error
	// Timeout bounds each API request's Redis work (default 5 s).
	Timeout time.Duration
	// TestMode says payments are simulated: the page says TEST MODE.
	TestMode bool
	// Room checks the waiting room's pass a page sends (x-queue-pass) on a
	// seated event with a room, as the storefront's seat API does
	// (storefront.SeatPass); nil answers such a pass 503.
	Room   *room.Service
	Logger *slog.Logger

	idx   catalog.Derived[index]
	avail availCache
}

func (p *Picker) logger() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.Default()
}

// Register mounts the page, its assets and its seat API.
func (p *Picker) Register(r *router.Router) {
	r.GET("/events/{slug}/{shortId}/seatmap", p.page)
	r.GET("/assets/picker/{file}", asset)
	seating.Mount(r.Group(Prefix+"/seating/events/{id}"), p.Seats, p.seatGate)
}
