package channel

import (
	"sort"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/handlers/views"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/capacity"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/keys"
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
	if e := views.OnSale(ev, a.now()); e != nil {
		return nil, e
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
	// A cursor is the last event id of a page (nextCursor): the list goes
	// on after it, so an event gone since still works as one, but a value
	// of no id's shape was never one.
	cursor := string(args.Peek("cursor"))
	if cursor != "" && !keys.ValidID(cursor) {
		httpx.Fail(ctx, apierr.Invalid("cursor must be a nextCursor this list answered"))
		return
	}
	all := c.snap.ChannelEvents[c.Channel.ID]
	start := sort.Search(len(all), func(i int) bool { return all[i].ID > cursor })
	out := make([]views.Event, 0, limit)
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
		out = append(out, views.EventOf(ev, "", nil, a.now()))
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
	// What this channel can sell: its allocation's share, beside a waiting room.
	remaining, err := a.Orders.Remaining(c.ctx, ev.ID, capacity.ChannelField(c.Channel.ID))
	if err != nil {
		httpx.Error(ctx, err)
		return
	}
	httpx.OK(ctx, views.EventOf(ev, string(ctx.QueryArgs().Peek("accessCode")), remaining, a.now()))
}
