// Package expiry holds the expiry-under-load fault test (issue 11 item 9):
// seat holds, storefront registrations and pending partner orders made by
// the thousand with TTLs of a second, expiring while new ones are made.
// Once all have expired and the sweepers ran, nothing may be left behind:
// the key space is back at its baseline, capacity back at full less what
// was paid, every seat free but the paid ones, and every paid order kept,
// in Postgres once.
package expiry

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/redis/rueidis"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/bench/faultreport"
	"github.com/ticketd/ticketd/handlers/channel"
	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/capacity"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/inventory/registrations"
)

// load is one expiry run.
type load struct {
	Workers int
	For     time.Duration // how long new holds, registrations and orders are made
	// PaidEvery: one partner order and one registration in PaidEvery is paid.
	PaidEvery int
}

const (
	ttl       = time.Second // OrderTTL, SeatHoldTTL, CheckoutTTL
	retention = time.Second // orders, registrations and Idempotency-Keys after their end
	gaEvent   = "ex_ga"
	hall      = "ex_hall"
	rows      = 40
	perRow    = 50
	ticketCap = 1_000_000
	chKey     = "ck_exp"
	chSecret  = "cs_exp_secret"
	chSigning = "sk_exp"
	pubKey    = "pk_exp"
	origin    = "http://localhost:3000"
)

var tickets = []string{"tk_a", "tk_b"}

// code is the GA event's limited discount code; buyers is how many
// e-mail addresses the GA carts come from.
const (
	code   = "EXP"
	buyers = 50
)

func buyerEmail(n int) string { return fmt.Sprintf("buyer%d@exp.example", n) }

func catalog() map[string]any {
	var rowDefs []any
	for r := range rows {
		rowDefs = append(rowDefs, map[string]any{"label": rowLabel(r), "seats": perRow, "category": "std"})
	}
	lim := 1_000_000
	return map[string]any{
		"tenants": []any{map[string]any{
			"id": "t_exp", "name": "Expiry", "notifyEmail": "host@exp.example",
			"publishableKeys": []any{map[string]any{"key": pubKey, "domains": []string{"localhost"}, "enabled": true}},
			"events": []any{
				map[string]any{"id": gaEvent, "shortId": "exga1", "slug": "exp-ga", "name": "GA", "startsAt": "2027-07-01T18:00:00Z",
					"status": "on_sale", "storefront": true, "channels": []string{"ch_exp"},
					// A limited code and a per-buyer limit, both far above
					// the load: their holds and counts must expire too.
					"discountCodes":      []any{map[string]any{"code": code, "percent": 10, "maxUses": 1_000_000}},
					"maxTicketsPerBuyer": 1_000_000,
					"tickets": []any{
						map[string]any{"id": tickets[0], "name": "A", "price": 10, "capacity": ticketCap, "maxPerOrder": 10},
						map[string]any{"id": tickets[1], "name": "B", "price": 20, "capacity": ticketCap, "maxPerOrder": 10}}},
				map[string]any{"id": hall, "shortId": "exh1", "slug": "exp-hall", "name": "Hall", "startsAt": "2027-07-01T18:00:00Z",
					"status": "on_sale", "storefront": true, "channels": []string{"ch_exp"}, "tickets": []any{},
					"seatMap": map[string]any{"categories": []any{map[string]any{"id": "std", "name": "Std", "price": 30}}, "rows": rowDefs}},
			}}},
		"channels": []any{map[string]any{"id": "ch_exp", "name": "Exp", "key": chKey, "secret": chSecret, "signingKey": chSigning,
			"scopes":      []string{"catalog:read", "orders:write", "orders:confirm", "orders:read", "sessions:write"},
			"ipAllowlist": []string{"127.0.0.1/32", "::1/128"}, "settlement": "partner_remit",
			"rateLimits": map[string]int{"catalog": lim, "status": lim, "checkout": lim, "confirm": lim, "session": lim}}},
	}
}

func rowLabel(r int) string { return fmt.Sprintf("R%d", r) }

// tally is what the load did, for the checks and the report.
type tally struct {
	mu       sync.Mutex
	outcomes map[string]int
	// paid partner orders and registrations: id -> admissions
	paid map[string]int
	// paid per ticket type, and the paid seats
	paidTickets map[string]int
	paidSeats   map[string]string // label -> order
	// paid admissions per event and seller's share (capacity.SellerField)
	paidShares map[string]map[string]int
	// partner orders left pending, to read their status at the end
	unpaid []string
	// paid GA admissions per buyer (orders.BuyerKey), and paid uses of code
	buyerAdmissions map[string]int
	codeUses        int
}

// ga is a GA cart: its ticket type, quantity, buyer and whether it uses
// the discount code.
type ga struct {
	ticket  string
	qty     int
	email   string
	useCode bool
}

func (a *actor) gaCart() ga {
	return ga{ticket: tickets[a.rnd.IntN(len(tickets))], qty: 1 + a.rnd.IntN(3), email: buyerEmail(a.rnd.IntN(buyers)), useCode: a.rnd.IntN(3) == 0}
}

func (c ga) fields(m map[string]any) {
	m["selectedTicketId"], m["quantity"] = c.ticket, c.qty
	if c.useCode {
		m["discountCode"] = code
	}
}

func (t *tally) count(what string) {
	t.mu.Lock()
	t.outcomes[what]++
	t.mu.Unlock()
}

// paidOrder records a paid order. It runs in the load's goroutines: a seat
// paid twice is reported with tb.Errorf (a panic there would end the test
// binary without the test's report).
func (t *tally) paidOrder(tb testing.TB, id, seller string, c ga, seats []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, dup := t.paid[id]; dup {
		return
	}
	qty := c.qty
	ev := gaEvent
	if seats != nil {
		ev = hall
		qty = len(seats)
		for _, l := range seats {
			if o, taken := t.paidSeats[l]; taken {
				tb.Errorf("seat %s paid by %s and %s", l, o, id)
				return
			}
		}
		for _, l := range seats {
			t.paidSeats[l] = id
		}
	} else {
		t.paidTickets[c.ticket] += qty
		t.buyerAdmissions[orders.BuyerKey(c.email)] += qty
		if c.useCode {
			t.codeUses++
		}
	}
	t.paid[id] = qty
	if t.paidShares[ev] == nil {
		t.paidShares[ev] = map[string]int{}
	}
	t.paidShares[ev][seller] += qty
}

type envelope struct {
	Success bool            `json:"success"`
	Code    string          `json:"code"`
	Reason  string          `json:"reason"`
	Data    json.RawMessage `json:"data"`
}

type answer struct {
	OrderID        string      `json:"orderId"`
	Amount         money.Cents `json:"amount"`
	Total          money.Cents `json:"total"`
	Status         string      `json:"status"`
	HoldToken      string      `json:"holdToken"`
	SeatLabels     []string    `json:"seatLabels"`
	RegistrationID string      `json:"registrationId"`
}

type actor struct {
	t      *testing.T
	s      *servertest.Server
	client *fasthttp.Client
	rnd    *rand.Rand
	tally  *tally
	l      load
	ips    *atomic.Int64
	late   *sync.WaitGroup // late confirms and payments, run beside the load
}

// post sends a call; code is "" for a success, the error code else, or
// "transport" when no answer came.
func (a *actor) post(path string, headers map[string]string, body any) (string, answer) {
	code, ans, _ := a.postWhy(path, headers, body)
	return code, ans
}

// postWhy is post that returns a refusal's reason too.
func (a *actor) postWhy(path string, headers map[string]string, body any) (string, answer, string) {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod("POST")
	req.SetRequestURI(a.s.URL + path)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	switch b := body.(type) {
	case string:
		req.SetBodyString(b)
	default:
		enc, _ := json.Marshal(b)
		req.SetBody(enc)
	}
	req.Header.SetContentType("application/json")
	if err := a.client.DoTimeout(req, resp, 30*time.Second); err != nil {
		a.t.Errorf("%s: %v", path, err)
		return "transport", answer{}, ""
	}
	var env envelope
	var ans answer
	if err := json.Unmarshal(resp.Body(), &env); err != nil {
		a.t.Errorf("%s: not an envelope (%d): %q", path, resp.StatusCode(), resp.Body())
		return "transport", ans, ""
	}
	if resp.StatusCode() >= 500 || resp.StatusCode() == 429 {
		a.t.Errorf("%s: %d %s", path, resp.StatusCode(), resp.Body())
	}
	_ = json.Unmarshal(env.Data, &ans)
	if resp.StatusCode() != 200 || !env.Success {
		return env.Code, ans, env.Reason
	}
	return "", ans, ""
}

func keyed() map[string]string {
	return map[string]string{"x-service-key": chKey, "x-service-secret": chSecret}
}

// shop is a storefront call from an address of its own: the storefront
// limits each client IP to 30 writes a minute (a bucket that lives 2 s a
// write), and the load is many buyers, each call one.
func (a *actor) shop() map[string]string {
	n := a.ips.Add(1)
	return map[string]string{"x-service-key": pubKey, "Origin": origin,
		"X-Forwarded-For": fmt.Sprintf("10.%d.%d.%d", n>>16&255, n>>8&255, n&255)}
}

func (a *actor) seats() []string {
	r, n := a.rnd.IntN(rows), 1+a.rnd.IntN(perRow-3)
	k := 1 + a.rnd.IntN(3)
	out := make([]string, k)
	for i := range out {
		out[i] = rowLabel(r) + "-" + strconv.Itoa(n+i)
	}
	return out
}

// partnerHold takes a hold token and holds seats; a share of the holds
// becomes a pending partner order, and a share of those is paid.
func (a *actor) partnerHold() {
	code, tok := a.post("/v1/channel/seating/events/"+hall+"/hold-token", keyed(), map[string]any{})
	if code != "" {
		a.tally.count("hold-token " + code)
		return
	}
	want := a.seats()
	code, _ = a.post("/v1/channel/seating/events/"+hall+"/hold", keyed(), map[string]any{"holdToken": tok.HoldToken, "seatLabels": want})
	a.tally.count("partner seat hold " + orOK(code))
	if code != "" || a.rnd.IntN(3) > 0 {
		return // the hold expires by itself
	}
	a.partnerReserve(map[string]any{"seatLabels": want, "seatHoldToken": tok.HoldToken}, ga{}, want)
}

func (a *actor) partnerGA() {
	c := a.gaCart()
	cart := map[string]any{"buyerEmail": c.email}
	c.fields(cart)
	a.partnerReserve(cart, c, nil)
}

func (a *actor) partnerReserve(cart map[string]any, c ga, seats []string) {
	h := keyed()
	h["Idempotency-Key"] = servertest.NewKey()
	code, res := a.post("/v1/channel/events/"+eventOf(seats)+"/checkout", h, servertest.Buyer(cart))
	a.tally.count("partner order " + orOK(code))
	if code != "" {
		return
	}
	if a.rnd.IntN(a.l.PaidEvery) != 0 {
		a.tally.mu.Lock()
		a.tally.unpaid = append(a.tally.unpaid, res.OrderID)
		a.tally.mu.Unlock()
		return // it expires pending
	}
	if a.rnd.IntN(3) == 0 {
		// After the order's expiry (in the background: the actor goes on
		// making new ones): it must fail, expired, and give nothing.
		wait := ttl + time.Duration(a.rnd.IntN(200))*time.Millisecond
		a.late.Go(func() {
			time.Sleep(wait)
			a.confirm(res, c, seats, true)
		})
		return
	}
	a.confirm(res, c, seats, false)
}

func (a *actor) confirm(res answer, c ga, seats []string, late bool) {
	ref := "ref-" + res.OrderID
	h := keyed()
	h["x-service-signature"] = channel.Signature(chSigning, res.OrderID, res.Amount, ref)
	code, conf, why := a.postWhy("/v1/channel/orders/confirm", h, fmt.Sprintf(`{"orderId":%q,"amount":%s,"partnerReference":%q}`, res.OrderID, res.Amount, ref))
	if late {
		a.tally.count("partner late confirm " + orOK(code) + " " + why)
		// expired while the order's record is kept; lost once its
		// retention (1 s here) is over too, which a loaded machine can
		// reach before the confirm leaves: both refuse and pay nothing.
		if code != "CONFIRM_FAILED" || (why != "expired" && why != "lost") {
			a.t.Errorf("confirm of %s after its expiry: %s %s, want CONFIRM_FAILED expired (or lost, after retention)", res.OrderID, orOK(code), why)
		}
		a.tally.mu.Lock()
		a.tally.unpaid = append(a.tally.unpaid, res.OrderID)
		a.tally.mu.Unlock()
		return
	}
	if code == "" && conf.Status == "paid" {
		a.tally.count("partner confirm paid")
		a.tally.paidOrder(a.t, res.OrderID, capacity.ChannelField("ch_exp"), c, seats)
	} else {
		a.tally.count("partner confirm " + code)
	}
}

func eventOf(seats []string) string {
	if seats != nil {
		return hall
	}
	return gaEvent
}

// register makes a storefront registration (GA, or seats held on the
// storefront first); a share is paid as the processor's webhook pays it.
func (a *actor) register() {
	var seats []string
	body := map[string]any{"name": "Grace Hopper", "email": "grace@example.com"}
	var c ga
	if a.rnd.IntN(3) == 0 {
		code, tok := a.post("/v1/storefront/seating/events/"+hall+"/hold-token", a.shop(), map[string]any{})
		if code != "" {
			a.tally.count("storefront hold-token " + code)
			return
		}
		seats = a.seats()
		code, _ = a.post("/v1/storefront/seating/events/"+hall+"/hold", a.shop(), map[string]any{"holdToken": tok.HoldToken, "seatLabels": seats})
		a.tally.count("storefront seat hold " + orOK(code))
		if code != "" {
			return
		}
		body["eventId"], body["seatLabels"], body["seatHoldToken"] = hall, seats, tok.HoldToken
	} else {
		c = a.gaCart()
		body["eventId"], body["email"] = gaEvent, c.email
		c.fields(body)
	}
	code, reg := a.post("/v1/storefront/register-guest", a.shop(), body)
	a.tally.count("registration " + orOK(code))
	if code != "" || a.rnd.IntN(a.l.PaidEvery) != 0 {
		return // it expires unpaid
	}
	// The checkout session the payment below pays, opened as the
	// storefront opens it: ticketd takes no payment of another.
	if err := a.s.Registrations.AttachSession(context.Background(), reg.RegistrationID, "card", sessionOf(reg)); err != nil {
		a.tally.count("registration's checkout not opened: " + err.Error())
		return // its window passed already: it expires unpaid
	}
	if a.rnd.IntN(3) == 0 {
		// Paid about when its window ends, racing the sweep: held, it
		// books what it holds; expired, it claims anew or is refunded.
		wait := ttl - 100*time.Millisecond + time.Duration(a.rnd.IntN(300))*time.Millisecond
		a.late.Go(func() {
			time.Sleep(wait)
			a.pay(reg, c, seats, "registration paid late")
		})
		return
	}
	a.pay(reg, c, seats, "registration paid")
}

func (a *actor) pay(reg answer, c ga, seats []string, what string) {
	out, err := a.s.Registrations.Pay(context.Background(), registrations.Payment{RegistrationID: reg.RegistrationID,
		Processor: "card", PaymentID: sessionOf(reg), Amount: reg.Total, Currency: "USD"})
	switch {
	case err != nil:
		a.t.Errorf("pay %s: %v", reg.RegistrationID, err)
	case out.RefundReason != "":
		a.tally.count(what + ": refund " + out.RefundReason)
	default:
		if out.Reclaimed {
			what += " (claimed anew)"
		}
		a.tally.count(what)
		a.tally.paidOrder(a.t, reg.RegistrationID, capacity.Storefront, c, seats)
	}
}

// sessionOf is the checkout session id of a registration's payment.
func sessionOf(reg answer) string { return "cs_" + reg.RegistrationID[1:13] }

func orOK(code string) string {
	if code == "" {
		return "ok"
	}
	return code
}

// expire runs l and checks that everything it did not pay expired
// without a trace.
func expire(t *testing.T, l load) {
	// Holds are counted per client IP and buyer as in production (every
	// request comes from an address of its own, so none is refused): the
	// counting keys must end with nothing held too.
	s := servertest.Start(t, servertest.Options{OrderTTL: ttl, SeatHoldTTL: ttl, CheckoutTTL: ttl, Retention: retention,
		Trusted: "127.0.0.1/32", HoldsPerIP: 8})
	s.Apply(t, catalog())
	// The paid streams' worker runs as on a node, so paid orders reach
	// Postgres while the load goes on.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var bg sync.WaitGroup
	defer bg.Wait()
	defer stop()
	bg.Go(func() {
		for ctx.Err() == nil {
			_, _ = s.Worker.DrainOnce(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	})

	baseline := sizes(t, s, redistest.Keys(t, s.Redis, s.Space))
	tl := &tally{outcomes: map[string]int{}, paid: map[string]int{}, paidTickets: map[string]int{}, paidSeats: map[string]string{}, paidShares: map[string]map[string]int{},
		buyerAdmissions: map[string]int{}}
	// The late confirms run beside the workers, as many at once as came
	// due: a call finding every connection busy waits for one instead of
	// failing at once with ErrNoFreeConns (it did, now and then).
	client := &fasthttp.Client{MaxConnsPerHost: 4 * l.Workers, MaxConnWaitTimeout: time.Minute, ReadTimeout: time.Minute, WriteTimeout: time.Minute}
	var ips atomic.Int64

	// The peak of the key space, sampled while the load runs. Not on the
	// test's goroutine, so no t.Fatal there: its first error is kept, and
	// reported once the sampler has ended.
	var peak atomic.Int64
	var sampleErr error
	sampling, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	bg.Go(func() {
		defer close(sampled)
		for sampling.Err() == nil {
			ks, err := redistest.ListKeys(sampling, s.Redis, s.Space)
			if err != nil {
				if sampling.Err() == nil {
					sampleErr = err
				}
				return
			}
			if n := int64(len(ks)); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-sampling.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	})

	start := time.Now()
	end := start.Add(l.For)
	var wg, late sync.WaitGroup
	for i := range l.Workers {
		a := &actor{t: t, s: s, client: client, rnd: rand.New(rand.NewPCG(uint64(i), uint64(start.UnixNano()))), tally: tl, l: l, ips: &ips, late: &late}
		wg.Go(func() {
			for time.Now().Before(end) {
				switch x := a.rnd.IntN(10); {
				case x < 4:
					a.partnerHold()
				case x < 6:
					a.partnerGA()
				default:
					a.register()
				}
			}
		})
	}
	wg.Wait()
	late.Wait()
	loadTook := time.Since(start)

	// Everything unpaid has now at most ttl to run, the sweep a tenth of a
	// second, the records retention: wait for the key space to come back.
	drainUntil := time.Now().Add(30 * time.Second)
	var left, grown []string
	for {
		left, grown = leftover(t, s, baseline)
		if len(left)+len(grown) == 0 || time.Now().After(drainUntil) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	stopSampling()
	<-sampled
	if sampleErr != nil {
		t.Errorf("sampling the key space during the load: %v", sampleErr)
	}
	settled := time.Since(start) - loadTook
	if len(left) > 0 {
		t.Errorf("%d keys left %s after the load beyond the baseline and the paid state: %s", len(left), settled.Round(time.Millisecond), shapes(s.Space.Prefix, left))
	}
	if len(grown) > 0 {
		t.Errorf("%d keys of the baseline larger %s after the load than before it: %s", len(grown), settled.Round(time.Millisecond), strings.Join(grown, ", "))
	}
	after := len(redistest.Keys(t, s.Redis, s.Space))

	paidTotal, paidOrders := checkPaid(t, s, tl)

	faultreport.Print(t, faultreport.Report{
		Injected: fmt.Sprintf("expiry: OrderTTL, SeatHoldTTL and CheckoutTTL %s, retention %s, sweeper every 100 ms", ttl, retention),
		Load: fmt.Sprintf("%d clients for %s making holds, registrations and partner orders, 1 in %d paid: %s",
			l.Workers, loadTook.Round(time.Millisecond), l.PaidEvery, outcomes(tl.outcomes)),
		Counts: fmt.Sprintf("keys baseline %d -> peak %d -> %d after %s, none left but the baseline and the paid state (sold, booked, buyers, code uses), baseline keys grown %d; "+
			"sold = paid %d admissions, capacity otherwise full; seats booked %d = paid seats, none held; "+
			"code uses %d = paid with it, buyer counts = paid admissions (%d buyers); Postgres rows %d = paid orders %d, each once",
			len(baseline), peak.Load(), after, settled.Round(time.Millisecond), len(grown), paidTotal, len(tl.paidSeats),
			tl.codeUses, len(tl.buyerAdmissions), paidOrders, len(tl.paid)),
	})
}

// paidState are the keys the paid orders keep for good, so they may be new
// or larger after the load: the sold counts, the booked seats, the buyers'
// admissions and the code's uses. checkPaid checks their contents exactly
// against what was paid instead.
func paidState(s *servertest.Server) map[string]bool {
	return map[string]bool{s.Space.Sold(gaEvent): true, s.Space.Sold(hall): true, s.Space.Booked(hall): true,
		s.Space.Buyers(gaEvent): true, s.Space.DiscountUsed(gaEvent): true}
}

// leftover lists the keys of the space that are neither in the baseline
// nor the paid state, and the baseline's keys (but the paid state's) that
// are larger than they were: members an expiry left in a key that existed
// before the load (a hold in an event's index, an entry in a sweep
// schedule, a paid stream's entry) are a leak as much as a new key.
func leftover(t *testing.T, s *servertest.Server, baseline map[string]size) (left, grown []string) {
	keep := paidState(s)
	var old []string
	for _, k := range redistest.Keys(t, s.Redis, s.Space) {
		switch _, known := baseline[k]; {
		case keep[k]:
		case known:
			old = append(old, k)
		default:
			left = append(left, k)
		}
	}
	now := sizes(t, s, old)
	for k, was := range baseline {
		if keep[k] {
			continue
		}
		// A key gone or smaller leaked nothing (a worker's liveness mark
		// expires with its TTL); the counts a paid order lowers are
		// checked in checkPaid.
		if is, ok := now[k]; ok && (is.kind != was.kind || is.n > was.n) {
			grown = append(grown, fmt.Sprintf("%s %s %d -> %s %d", k, was.kind, was.n, is.kind, is.n))
		}
	}
	sort.Strings(grown)
	return left, grown
}

// size is a key's type and how many members (hash fields, set and sorted
// set members, stream entries, list items) or, for a string, bytes it
// holds; a key that is gone is the zero size.
type size struct {
	kind string
	n    int64
}

// sizes reads the size of each of ks.
func sizes(t *testing.T, s *servertest.Server, ks []string) map[string]size {
	t.Helper()
	ctx := context.Background()
	cmds := make(rueidis.Commands, len(ks))
	for i, k := range ks {
		cmds[i] = s.Redis.B().Type().Key(k).Build()
	}
	out := make(map[string]size, len(ks))
	var kinds []string
	cmds2 := make(rueidis.Commands, 0, len(ks))
	for i, r := range s.Redis.DoMulti(ctx, cmds...) {
		kind, err := r.ToString()
		if err != nil {
			t.Fatalf("TYPE %s: %v", ks[i], err)
		}
		b := s.Redis.B()
		var c rueidis.Completed
		switch kind {
		case "none":
			continue // gone since it was listed: the zero size
		case "hash":
			c = b.Hlen().Key(ks[i]).Build()
		case "set":
			c = b.Scard().Key(ks[i]).Build()
		case "zset":
			c = b.Zcard().Key(ks[i]).Build()
		case "stream":
			c = b.Xlen().Key(ks[i]).Build()
		case "list":
			c = b.Llen().Key(ks[i]).Build()
		case "string":
			c = b.Strlen().Key(ks[i]).Build()
		default:
			t.Fatalf("%s: a key of type %s", ks[i], kind)
		}
		kinds = append(kinds, ks[i], kind)
		cmds2 = append(cmds2, c)
	}
	for i, r := range s.Redis.DoMulti(ctx, cmds2...) {
		n, err := r.AsInt64()
		if err != nil {
			t.Fatalf("size of %s: %v", kinds[2*i], err)
		}
		out[kinds[2*i]] = size{kind: kinds[2*i+1], n: n}
	}
	return out
}

// shapes summarises keys by their shape: the space's prefix, partition
// numbers, ids and labels cut off ("{p*}:ord 344, {p*}:ev:ex_hall:seat 3").
func shapes(prefix string, ks []string) string {
	m := map[string]int{}
	for _, k := range ks {
		parts := strings.Split(strings.TrimPrefix(k, prefix), ":")
		n := 2 // {p*}:ord, {i*}:idem, ...
		if len(parts) > 1 && parts[1] == "ev" {
			n = 4 // {p*}:ev:<event>:seat, ...:hold, ...
		}
		if len(parts) > n {
			parts = parts[:n]
		}
		parts[0] = tagNumber.ReplaceAllString(parts[0], "*")
		m[strings.Join(parts, ":")]++
	}
	return outcomes(m)
}

var tagNumber = regexp.MustCompile(`[0-9]+`)

// checkPaid checks the state the paid orders left: sold counts exactly the
// paid admissions, booked exactly the paid seats, every paid order in
// Postgres once and answered paid; the unpaid partner orders failed.
func checkPaid(t *testing.T, s *servertest.Server, tl *tally) (admissions, rows int) {
	ctx := context.Background()
	// Sold counts: per ticket type ("t:<id>") and the event's admissions
	// ("ev"), in both events; each must be exactly what was paid.
	want := map[string]map[string]int{gaEvent: {"ev": 0}, hall: {"ev": len(tl.paidSeats)}}
	for _, tk := range tickets {
		want[gaEvent]["t:"+tk] = tl.paidTickets[tk]
		want[gaEvent]["ev"] += tl.paidTickets[tk]
	}
	// "paid" counts the units ever paid (the sold mark's source): with no
	// refund and no loss, exactly the paid admissions; each seller's share
	// ("sf", "ch:<channel>") what that seller was paid for.
	for ev, fields := range want {
		fields["paid"] = fields["ev"]
		for seller, n := range tl.paidShares[ev] {
			fields[seller] = n
		}
	}
	for ev, fields := range want {
		sold, err := s.Redis.Do(ctx, s.Redis.B().Hgetall().Key(s.Space.Sold(ev)).Build()).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		for f, v := range sold {
			if _, known := fields[f]; !known && v != "0" {
				t.Errorf("%s sold %s = %s: no paid order claims it", ev, f, v)
			}
		}
		for f, n := range fields {
			if got, _ := strconv.Atoi(sold[f]); got != n {
				t.Errorf("%s sold %s = %d, want the paid %d (unpaid ones leaked capacity)", ev, f, got, n)
			}
		}
	}
	// The per-buyer counts and the code's uses: the paid ones, nothing
	// of the expired.
	perBuyer, err := s.Redis.Do(ctx, s.Redis.B().Hgetall().Key(s.Space.Buyers(gaEvent)).Build()).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	wantBuyers := map[string]string{}
	for k, n := range tl.buyerAdmissions {
		wantBuyers[k] = strconv.Itoa(n)
	}
	if !maps.Equal(perBuyer, wantBuyers) {
		t.Errorf("buyers' admissions %v, want the paid %v", perBuyer, wantBuyers)
	}
	used, _ := s.Redis.Do(ctx, s.Redis.B().Hget().Key(s.Space.DiscountUsed(gaEvent)).Field(code).Build()).AsInt64()
	if int(used) != tl.codeUses {
		t.Errorf("discount code used %d times, want the paid %d", used, tl.codeUses)
	}
	booked, err := s.Redis.Do(ctx, s.Redis.B().Hgetall().Key(s.Space.Booked(hall)).Build()).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(booked, tl.paidSeats) {
		t.Errorf("booked seats %d, want the %d paid ones exactly", len(booked), len(tl.paidSeats))
	}
	// No seat is held: the availability the pages read.
	r := s.Do(t, "GET", "/v1/channel/seating/events/"+hall+"/availability", servertest.Keyed("exp"), nil)
	var av struct {
		Held   []string `json:"held"`
		Booked []string `json:"booked"`
	}
	r.Decode(t, &av)
	if len(av.Held) != 0 || len(av.Booked) != len(tl.paidSeats) {
		t.Errorf("availability: %d held, %d booked; want 0 and %d", len(av.Held), len(av.Booked), len(tl.paidSeats))
	}
	// Capacity is back to full, less what was paid.
	r = s.Do(t, "GET", "/v1/channel/events/"+gaEvent, servertest.Keyed("exp"), nil)
	var detail struct {
		Tickets []struct {
			ID        string `json:"id"`
			Remaining int    `json:"remaining"`
		} `json:"tickets"`
	}
	r.Decode(t, &detail)
	for _, tk := range detail.Tickets {
		if want := ticketCap - tl.paidTickets[tk.ID]; tk.Remaining != want {
			t.Errorf("%s remaining %d, want %d", tk.ID, tk.Remaining, want)
		}
	}
	// Postgres has every paid order once, and nothing else.
	s.Drain(t)
	ids := map[string]int{}
	pgRows, err := s.Pool.Query(ctx, "SELECT id FROM orders")
	if err != nil {
		t.Fatal(err)
	}
	for pgRows.Next() {
		var id string
		if err := pgRows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids[id]++
		rows++
	}
	pgRows.Close()
	for id := range tl.paid {
		if ids[id] != 1 {
			t.Errorf("paid order %s is in Postgres %d times", id, ids[id])
		}
	}
	if rows != len(tl.paid) {
		t.Errorf("Postgres has %d orders, %d were paid", rows, len(tl.paid))
	}
	for _, n := range tl.paid {
		admissions += n
	}
	// Paid orders aged out of Redis are answered from Postgres; unpaid
	// ones are failed. A sample of each, over HTTP.
	checked := 0
	for id := range tl.paid {
		if checked == 20 {
			break
		}
		if !strings.HasSuffix(id, gaEvent) && !strings.HasSuffix(id, hall) {
			continue
		}
		checked++
		if st := status(t, s, id); st != "paid" && !isRegistration(t, s, id) {
			t.Errorf("paid order %s: status %s", id, st)
		}
	}
	for i, id := range tl.unpaid {
		if i == 20 {
			break
		}
		if st := status(t, s, id); st != "failed" {
			t.Errorf("expired order %s: status %s, want failed", id, st)
		}
	}
	return admissions, rows
}

// isRegistration: a storefront registration's id is not the partner's to
// read (NOT_FOUND on the partner surface).
func isRegistration(t *testing.T, s *servertest.Server, id string) bool {
	var one int
	err := s.Pool.QueryRow(context.Background(), "SELECT 1 FROM orders WHERE id = $1 AND source = 'storefront'", id).Scan(&one)
	return err == nil
}

func status(t *testing.T, s *servertest.Server, id string) string {
	r := s.Do(t, "POST", "/v1/channel/orders/status", servertest.Keyed("exp"), map[string]string{"orderId": id})
	var d struct {
		Status string `json:"status"`
	}
	if r.Status == 200 {
		r.Decode(t, &d)
	}
	return d.Status
}

func outcomes(m map[string]int) string {
	ks := slices.Collect(maps.Keys(m))
	sort.Strings(ks)
	var b strings.Builder
	for i, k := range ks {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, m[k])
	}
	return b.String()
}

// TestFaultExpiryShort is the short run of make test: a couple of seconds
// of load, a few hundred holds, registrations and orders.
func TestFaultExpiryShort(t *testing.T) {
	expire(t, load{Workers: 6, For: 1500 * time.Millisecond, PaidEvery: 4})
}
