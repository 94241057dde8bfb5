package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/cmd/internal/connurl"
	"github.com/ticketd/ticketd/handlers/connlimit"
	"github.com/ticketd/ticketd/handlers/demosite"
	"github.com/ticketd/ticketd/inventory/catalog"
)

// demoEvents are the events of the demo catalog (demo.json), in the
// order the demo shop lists them: those for sale first, free ones last.
// demoKinds says what each is, for the log and the printed summary; an
// event no channel sells is "storefront only": the partner surface answers
// EVENT_NOT_FOUND for it.
var demoEvents, demoKinds = func() ([]string, []string) {
	doc, err := catalog.Decode(demoCatalog)
	if err != nil {
		panic(err) // embedded; TestDemoCatalog and every demo test read it
	}
	var ids, kinds, freeIDs, freeKinds []string
	for _, tn := range doc.Tenants {
		for _, ev := range tn.Events {
			free := ev.SeatMap == nil
			for _, tk := range ev.Tickets {
				free = free && tk.Price == 0
			}
			// A multi-showing event says how many showings it has (a
			// seat map has none: the catalog refuses both).
			ga := "GA"
			if n := len(ev.Showings); n > 0 {
				ga = fmt.Sprintf("GA, %d showings", n)
			}
			kind, last := ga, false
			switch {
			case ev.WaitingRoom != nil && ev.SeatMap != nil:
				kind = "seat map, waiting room"
			case ev.WaitingRoom != nil:
				kind = ga + ", waiting room"
			case ev.SeatMap != nil:
				kind = "seat map"
			case free:
				kind, last = "free", true
			}
			if len(ev.Channels) == 0 {
				kind += ", storefront only"
			}
			if last {
				freeIDs, freeKinds = append(freeIDs, ev.ID), append(freeKinds, kind)
			} else {
				ids, kinds = append(ids, ev.ID), append(kinds, kind)
			}
		}
	}
	return append(ids, freeIDs...), append(kinds, freeKinds...)
}()

// demoRoomDelay is how long after ticketd -demo starts the demo's waiting
// rooms (ev_demo_room's, ev_demo_room_seated's and each showing's line of
// ev_demo_shows) begin to admit buyers: its salesStartAt (T0).
const demoRoomDelay = time.Minute

// demoRoomTimes gives the waiting rooms of the demo catalog doc times that
// make sense whenever the demo starts (demo.json's are placeholders): the
// room opens at start, now, and admits from start plus t0 (demoRoomDelay
// when 0), so a visitor of the shop sees the queue before the on-sale,
// then the admission. Each start applies the catalog again, so each
// restart of the demo opens the room anew. work, when set, is the rooms'
// proof of work.
func demoRoomTimes(doc *catalog.Document, start time.Time, t0 time.Duration, work *catalog.ProofOfWork) {
	if t0 <= 0 {
		t0 = demoRoomDelay
	}
	opens := start.UTC().Truncate(time.Second)
	for i := range doc.Tenants {
		for j := range doc.Tenants[i].Events {
			if wr := doc.Tenants[i].Events[j].WaitingRoom; wr != nil {
				wr.OpensAt = opens.Format(time.RFC3339)
				wr.SalesStartAt = opens.Add(max(t0, time.Second)).Format(time.RFC3339)
				wr.ProofOfWork = work
			}
		}
	}
}

// demoEventList is "ev_a (GA), ev_b (seat map), ...".
func demoEventList() string {
	parts := make([]string, len(demoEvents))
	for i, id := range demoEvents {
		parts[i] = id + " (" + demoKinds[i] + ")"
	}
	return strings.Join(parts, ", ")
}

// demoShop listens on cfg.DemoAddr and returns the demo shop's server,
// which calls the API at cfg.AppURL from the buyer's browser.
func demoShop(cfg config, log *slog.Logger) (*fasthttp.Server, net.Listener, error) {
	ln, err := net.Listen("tcp", cfg.DemoAddr)
	if err != nil {
		return nil, nil, fmt.Errorf("demo shop: listen %s (TICKETD_DEMO_ADDR): %w", cfg.DemoAddr, err)
	}
	site := demosite.Site{AppURL: cfg.AppURL, PublishableKey: "pk_demo", Events: demoEvents}
	srv := &fasthttp.Server{Handler: site.Handler(), Name: "demo-shop",
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	log.Info("demo shop: "+shopURL(ln.Addr()), "api", connurl.Redacted(cfg.AppURL))
	// No caps, but a failed accept (EMFILE) is retried here too: fasthttp
	// would return it, and either server stopping stops the node.
	return srv, connlimit.New(ln, connlimit.Limits{}, log), nil
}

// shopURL is the demo shop's address as a browser opens it: localhost
// (a key domain of pk_demo, and another origin than the API's port).
func shopURL(a net.Addr) string {
	_, port, _ := net.SplitHostPort(a.String())
	return "http://localhost:" + port
}

// printDemo prints the demo credentials and three curl lines that work as
// pasted, in order, into one shell (the second sets ORDER and AMOUNT). The
// demo shop's line only when this node serves it (not -mode worker).
func printDemo(w io.Writer, cfg config, shop bool) {
	base := cfg.AppURL
	hdr := `-H 'x-service-key: ck_demo' -H 'x-service-secret: cs_demo_secret'`
	shopLine := ""
	if shop {
		shopLine = "demo shop        http://localhost" + demoPort(cfg.DemoAddr) + " (TICKETD_DEMO_ADDR; README: The demo shop)\n"
	}
	fmt.Fprintf(w, `
================ ticketd demo ================
channel key      ck_demo
channel secret   cs_demo_secret
signing key      sk_demo_signing
publishable key  pk_demo (storefront pages on localhost, 127.0.0.1; README: The storefront flow)
events           %s
%sadmin token      %s

# 1. the partner catalog
curl -s %s %s/v1/channel/events

# 2. reserve one General ticket (sets ORDER and AMOUNT for line 3)
eval "$(curl -s %s -H 'Content-Type: application/json' -H "Idempotency-Key: $(date +%%s%%N)" -d '{"buyerName":"Ada Lovelace","buyerEmail":"ada@example.com","selectedTicketId":"tk_general","quantity":1}' %s/v1/channel/events/ev_demo_ga/checkout | sed -E 's/.*"orderId":"([^"]+)".*"amount":([0-9.]+).*/ORDER=\1 AMOUNT=\2/')"; echo "order $ORDER amount $AMOUNT"

# 3. confirm it with the signed request (HMAC-SHA256 over orderId.amount.USD.partnerReference)
curl -s %s -H 'Content-Type: application/json' -H "x-service-signature: $(printf '%%s' "$ORDER.$AMOUNT.USD.demo-ref-1" | openssl dgst -sha256 -hmac sk_demo_signing | sed 's/^.* //')" -d "{\"orderId\":\"$ORDER\",\"amount\":$AMOUNT,\"partnerReference\":\"demo-ref-1\"}" %s/v1/channel/orders/confirm
==============================================
`, demoEventList(), shopLine, adminShown(cfg.AdminToken), hdr, base, hdr, base, hdr, base)
}

func adminShown(tok string) string {
	if tok == "" {
		return "(TICKETD_ADMIN_TOKEN not set: admin surface off)"
	}
	return "(from TICKETD_ADMIN_TOKEN)"
}

// demoPort is ":port" of the demo shop's address, as printDemo shows it.
func demoPort(addr string) string {
	if _, p, err := net.SplitHostPort(addr); err == nil && p != "" {
		return ":" + p
	}
	return ":8081"
}
