package admin

import (
	"context"
	"regexp"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/room"
)

// readTimeout bounds an admin read's Redis work.
const readTimeout = 5 * time.Second

var (
	errEventNotFound = apierr.Of("EVENT_NOT_FOUND", "no event with this id in the catalog")
	errNoRoom        = apierr.Of("NO_WAITING_ROOM",
		"this event has no waiting room: give its catalog event a waitingRoom (opensAt, salesStartAt) to sell through one")
)

// QueueView is GET /v1/admin/events/{eventId}/queue's answer: the room's
// settings as compiled from the catalog, and its figures now.
type QueueView struct {
	EventID string `json:"eventId"`
	// ShowingID is the showing whose line it is, on a multi-showing
	// event (?showingId=).
	ShowingID string       `json:"showingId,omitempty"`
	Room      RoomSettings `json:"room"`
	Stats     QueueStats   `json:"stats"`
}

// RoomSettings are an event's waiting room settings, defaults filled in.
type RoomSettings struct {
	OpensAt      string `json:"opensAt"`
	SalesStartAt string `json:"salesStartAt"`
	// PassTTL is in seconds.
	PassTTL  int64  `json:"passTtl"`
	PerBuyer int64  `json:"perBuyer"`
	Mode     string `json:"mode"`
	Stock    int64  `json:"stock"`
}

// QueueStats are room.Stats, with the pass conversion worked out.
type QueueStats struct {
	Arrivals     int64 `json:"arrivals"`
	Waiting      int64 `json:"waiting"`
	WaitingUnits int64 `json:"waitingUnits"`
	Reserved     int64 `json:"reserved"`
	LivePasses   int64 `json:"livePasses"`
	// Admitted is the frontier: passes given so far.
	Admitted int64 `json:"admitted"`
	Used     int64 `json:"used"`
	Lapsed   int64 `json:"lapsed"`
	// Conversion is Used / (Used + Lapsed), null until a pass ended.
	Conversion *float64 `json:"conversion"`
}

// RoomView is the view of a compiled room.
func RoomView(r *catalog.Room) RoomSettings {
	return RoomSettings{OpensAt: r.OpensAt.UTC().Format(time.RFC3339), SalesStartAt: r.SalesStartAt.UTC().Format(time.RFC3339),
		PassTTL: int64(r.PassTTL / time.Second), PerBuyer: r.PerBuyer, Mode: r.Mode(), Stock: r.Stock}
}

// StatsView is the view of room.Stats.
func StatsView(st room.Stats) QueueStats {
	q := QueueStats{Arrivals: st.Arrivals, Waiting: st.Waiting, WaitingUnits: st.WaitingUnits, Reserved: st.Reserved,
		LivePasses: st.LivePasses, Admitted: st.Admitted, Used: st.Used, Lapsed: st.Lapsed}
	if c, ok := st.Conversion(); ok {
		q.Conversion = &c
	}
	return q
}

// queue is GET /v1/admin/events/{eventId}/queue[?showingId=]: the event's
// waiting room (a showing's line on a multi-showing event) as an operator
// sees it (ticketctl queue), in one Redis round trip; nothing is admitted
// by reading it.
func (a *API) queue(ctx *fasthttp.RequestCtx, rctx context.Context, _ struct{}) {
	ev, line := a.roomLine(ctx)
	if line == nil {
		return
	}
	st, err := a.Room.Stats(rctx, line.ID)
	if err != nil {
		httpx.Error(ctx, err)
		return
	}
	httpx.OK(ctx, QueueView{EventID: ev.ID, ShowingID: line.Showing, Room: RoomView(line), Stats: StatsView(st)})
}

// roomLine is the path's event, which must have a waiting room, and the
// line the query's showingId names (room.LineOf: required on a
// multi-showing event); nil when it answered a refusal.
func (a *API) roomLine(ctx *fasthttp.RequestCtx) (*catalog.CompiledEvent, *catalog.Room) {
	ev := a.roomEvent(ctx)
	if ev == nil {
		return nil, nil
	}
	line, e := room.LineOf(ev, string(ctx.QueryArgs().Peek("showingId")))
	if e != nil {
		httpx.Fail(ctx, e)
		return nil, nil
	}
	return ev, line
}

// roomEvent is the path's event, which must have a waiting room; nil
// when it answered a refusal.
func (a *API) roomEvent(ctx *fasthttp.RequestCtx) *catalog.CompiledEvent {
	id, _ := ctx.UserValue("eventId").(string)
	var ev *catalog.CompiledEvent
	if a.Catalog != nil {
		if snap := a.Catalog.Current(); snap != nil {
			ev = snap.Events[id]
		}
	}
	switch {
	case ev == nil:
		httpx.Fail(ctx, errEventNotFound.With("eventId", id))
		return nil
	case ev.Room == nil || a.Room == nil:
		httpx.Fail(ctx, errNoRoom.With("eventId", id))
		return nil
	}
	return ev
}

// AuditView is GET /v1/admin/events/{eventId}/queue/audit's answer: the
// room's audit entries after the one given, in order, and the id to ask
// after next ("" when none were read).
type AuditView struct {
	EventID   string       `json:"eventId"`
	ShowingID string       `json:"showingId,omitempty"`
	Entries   []AuditEntry `json:"entries"`
	Next      string       `json:"next"`
}

// AuditEntry is one audit entry (room.AuditEntry).
type AuditEntry struct {
	ID      string `json:"id"`
	What    string `json:"what"`
	QueueID string `json:"queueId,omitempty"`
	Units   int64  `json:"units,omitempty"`
	Rank    string `json:"rank,omitempty"`
	Was     string `json:"was,omitempty"`
	Key     string `json:"shuffleKey,omitempty"`
}

// maxAuditRead caps the entries one audit read answers.
const maxAuditRead = 10000

var errAuditQuery = apierr.Invalid("after must be an audit entry id (<ms>-<seq>) and count 1 to %d", maxAuditRead)

// queueAudit is GET /v1/admin/events/{eventId}/queue/audit?after=&count=
// [&showingId=]: the room's audit (a showing's line's on a multi-showing
// event) (each pass given in admission order with its place's
// rank, each pass used, lapsed or given back, the shuffle key once shown),
// count entries (default 1,000) after the entry after ("" the start), in
// one Redis round trip: with the key and the ranks an operator can show
// that the admission order is the committed one.
func (a *API) queueAudit(ctx *fasthttp.RequestCtx, rctx context.Context, _ struct{}) {
	ev, line := a.roomLine(ctx)
	if line == nil {
		return
	}
	args := ctx.QueryArgs()
	after := string(args.Peek("after"))
	count := int64(1000)
	if c := args.Peek("count"); len(c) > 0 {
		n, err := strconv.ParseInt(string(c), 10, 64)
		if err != nil || n < 1 || n > maxAuditRead {
			httpx.Fail(ctx, errAuditQuery)
			return
		}
		count = n
	}
	if after != "" && !auditID.MatchString(after) {
		httpx.Fail(ctx, errAuditQuery)
		return
	}
	entries, err := a.Room.Audit(rctx, line.ID, after, count)
	if err != nil {
		httpx.Error(ctx, err)
		return
	}
	v := AuditView{EventID: ev.ID, ShowingID: line.Showing, Entries: make([]AuditEntry, len(entries))}
	for i, e := range entries {
		v.Entries[i] = AuditEntry{ID: e.ID, What: e.What, QueueID: e.QueueID, Units: e.Units, Rank: e.Rank, Was: e.Was, Key: e.Key}
		v.Next = e.ID
	}
	httpx.OK(ctx, v)
}

// auditID is a stream entry id.
var auditID = regexp.MustCompile(`^[0-9]{1,20}-[0-9]{1,20}$`)
