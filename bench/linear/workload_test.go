package linear

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	json "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/bench/faultreport"
	"github.com/ticketd/ticketd/handlers/channel"
	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/redistest"
)

// run is one linearizability run: the stack, the load and what is injected.
type run struct {
	Workers, OpsPerWorker int
	// GA: GAEvents events of GATickets ticket types, of capacities spread
	// up to Cap (capOf); seated: SeatEvents events of one row of Seats
	// seats.
	GAEvents, GATickets, Cap int
	SeatEvents, Seats        int
	// Latency, when Base > 0, puts the test's own redis-server behind a
	// LatencyProxy.
	Base, Jitter time.Duration
	// ShortDeadline, when > 0, is the client deadline of one call in
	// ShortEvery: those time out often, and their outcome is unknown.
	ShortDeadline time.Duration
	ShortEvery    int
	Injected      string
}

const (
	channelID = "ch_lin"
	chKey     = "ck_lin"
	chSecret  = "cs_lin_secret"
	chSigning = "sk_lin"
	price     = 10 // GA ticket price, whole dollars
)

// capOf is ticket type j's capacity: from Cap/GATickets up to Cap, so the
// types sell out one after another over the whole run (the confirms that
// race for a type's last tickets, and the reserves refused once it is
// gone) while the larger ones still sell.
func (r run) capOf(j int) int { return max(1, r.Cap*(j+1)/r.GATickets) }

func gaEvent(i int) string   { return fmt.Sprintf("ev_lin_g%d", i) }
func gaTicket(j int) string  { return fmt.Sprintf("tk_%d", j) }
func seatEvent(i int) string { return fmt.Sprintf("ev_lin_s%d", i) }
func seatLabel(n int) string { return fmt.Sprintf("A-%d", n) }

// catalog is the run's catalog: no event capacity, so every ticket type
// and every seated event is a partition of its own; rate limits far above
// the load.
func (r run) catalog() map[string]any {
	var events []map[string]any
	for i := range r.GAEvents {
		var tks []map[string]any
		for j := range r.GATickets {
			tks = append(tks, map[string]any{"id": gaTicket(j), "name": "T" + fmt.Sprint(j), "price": price, "capacity": r.capOf(j), "maxPerOrder": 10})
		}
		events = append(events, map[string]any{"id": gaEvent(i), "shortId": fmt.Sprintf("lg%d", i), "slug": fmt.Sprintf("lin-g%d", i),
			"name": "GA", "startsAt": "2027-07-01T18:00:00Z", "status": "on_sale", "storefront": false,
			"channels": []string{channelID}, "tickets": tks})
	}
	for i := range r.SeatEvents {
		events = append(events, map[string]any{"id": seatEvent(i), "shortId": fmt.Sprintf("ls%d", i), "slug": fmt.Sprintf("lin-s%d", i),
			"name": "Seated", "startsAt": "2027-07-01T18:00:00Z", "status": "on_sale", "storefront": false,
			"channels": []string{channelID}, "tickets": []any{},
			// A worker's token gathers seats over the run (holds of one or
			// two, releases of some): no order limit below the row's size, so
			// the model needs none.
			"maxPerOrder": 1000,
			"seatMap": map[string]any{
				"categories": []any{map[string]any{"id": "std", "name": "Std", "price": 30}},
				"rows":       []any{map[string]any{"label": "A", "seats": r.Seats, "category": "std"}}}})
	}
	lim := 1_000_000
	return map[string]any{
		"tenants": []any{map[string]any{"id": "t_lin", "name": "Lin", "notifyEmail": "host@lin.example", "events": events}},
		"channels": []any{map[string]any{"id": channelID, "name": "Lin", "key": chKey, "secret": chSecret, "signingKey": chSigning,
			"scopes":      []string{"catalog:read", "orders:write", "orders:confirm", "orders:read", "sessions:write"},
			"ipAllowlist": []string{"127.0.0.1/32", "::1/128"}, "settlement": "partner_remit",
			"rateLimits": map[string]int{"catalog": lim, "status": lim, "checkout": lim, "confirm": lim, "session": lim}}},
	}
}

// recorder collects the history.
type recorder struct {
	t0  time.Time
	mu  sync.Mutex
	ops []porcupine.Operation
	seq atomic.Int64
	// outcomes counts "kind outcome" lines for the report.
	outcomes map[string]int
}

func (rec *recorder) add(client int, in Input, call time.Time, out Output, ret time.Time) {
	end := ret.Sub(rec.t0).Nanoseconds()
	if out.Unknown {
		// It may take effect at any later moment: porcupine may place it
		// anywhere after its call.
		end = math.MaxInt64
	}
	what := "ok"
	switch {
	case out.Unknown:
		what = "unknown"
	case out.Status != "" && in.Kind != Status:
		what = out.Status
		if out.Duplicate {
			what += " (duplicate)"
		}
	case in.Kind == Status:
		what = out.Status
	case out.OK && out.Duplicate:
		what = "ok (duplicate)"
	case !out.OK:
		what = out.Code
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.ops = append(rec.ops, porcupine.Operation{ClientId: client, Input: in, Call: call.Sub(rec.t0).Nanoseconds(), Output: out, Return: end})
	rec.outcomes[in.Kind.String()+" "+what]++
}

// envelope is a response as the caller reads it.
type envelope struct {
	Success   bool            `json:"success"`
	Code      string          `json:"code"`
	Reason    string          `json:"reason"`
	Remaining int             `json:"remaining"`
	Data      json.RawMessage `json:"data"`
}

type data struct {
	OrderID    string      `json:"orderId"`
	Amount     money.Cents `json:"amount"`
	Status     string      `json:"status"`
	Duplicate  bool        `json:"duplicate"`
	HoldToken  string      `json:"holdToken"`
	SeatLabels []string    `json:"seatLabels"`
	Released   []string    `json:"released"`
	Conflicts  []string    `json:"conflicts"`
	Seats      []string    `json:"seats"`
}

type known struct {
	id, part string
	cap      int
	amount   money.Cents
}

// shared is every worker's orders, so that workers confirm and read each
// other's orders too: two confirms of one order race, and exactly one of
// them may answer paid without duplicate.
type shared struct {
	mu     sync.Mutex
	orders []known
}

func (sh *shared) add(o known) {
	sh.mu.Lock()
	sh.orders = append(sh.orders, o)
	sh.mu.Unlock()
}

func (sh *shared) pick(rnd *rand.Rand) (known, bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if len(sh.orders) == 0 {
		return known{}, false
	}
	// the recent ones, mostly: those are the pending ones
	n := len(sh.orders)
	return sh.orders[n-1-rnd.IntN(min(n, 8))], true
}

type worker struct {
	t      *testing.T
	shared *shared
	r      run
	id     int
	base   string
	client *fasthttp.Client
	rec    *recorder
	rnd    *rand.Rand
	n      int // calls made
	orders []known
	tokens map[int]string   // seated event -> this worker's hold token
	held   map[int][]string // seated event -> seats it believes its token holds
}

// call sends one request; ok false when no usable answer came back.
func (w *worker) call(path string, headers map[string]string, body any) (int, envelope, data, bool) {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod("POST")
	req.SetRequestURI(w.base + "/v1/channel" + path)
	req.Header.Set("x-service-key", chKey)
	req.Header.Set("x-service-secret", chSecret)
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
	w.n++
	deadline := 30 * time.Second
	if w.r.ShortDeadline > 0 && w.n%w.r.ShortEvery == w.id%w.r.ShortEvery {
		deadline = w.r.ShortDeadline
	}
	if err := w.client.DoTimeout(req, resp, deadline); err != nil {
		return 0, envelope{}, data{}, false
	}
	var env envelope
	var d data
	if err := json.Unmarshal(resp.Body(), &env); err != nil {
		w.t.Errorf("%s: not an envelope (%d): %q", path, resp.StatusCode(), resp.Body())
		return 0, env, d, false
	}
	if len(env.Data) > 0 {
		_ = json.Unmarshal(env.Data, &d)
	}
	st := resp.StatusCode()
	if st == 429 || (st >= 400 && st < 500 && env.Code == "") {
		w.t.Errorf("%s: %d %s", path, st, resp.Body())
	}
	// Only a 503 (Redis slow or away: the call may have acted) leaves the
	// outcome unknown, as a timeout does; any other 5xx is a bug, not a
	// fault the history may absorb.
	if st >= 500 && st != 503 {
		w.t.Errorf("%s: %d %s; only 503 may answer a call whose outcome is unknown", path, st, resp.Body())
	}
	return st, env, d, st < 500
}

// do runs one operation and records it.
func (w *worker) do(in Input, path string, headers map[string]string, body any) (Output, data) {
	in.Op = int(w.rec.seq.Add(1))
	call := time.Now()
	status, env, d, ok := w.call(path, headers, body)
	ret := time.Now()
	out := Output{Unknown: !ok}
	if ok {
		out.OK = status == 200 && env.Success
		if !out.OK {
			out.Code, out.Remaining = env.Code, env.Remaining
		}
		switch in.Kind {
		case Reserve:
			out.Order, out.Duplicate = d.OrderID, d.Duplicate
			if env.Code == "SEAT_CONFLICT" {
				out.Seats = d.Conflicts
			} else if env.Code == "SEAT_NOT_HELD" {
				out.Seats = d.Seats
			}
		case Confirm:
			out.Status, out.Duplicate = d.Status, d.Duplicate
			if env.Code == "CONFIRM_FAILED" {
				out.Status, out.Reason = "failed", env.Reason
			}
		case Status:
			out.Status = d.Status
		case Hold:
			out.Seats = d.SeatLabels
			if env.Code == "SEAT_CONFLICT" {
				out.Seats = d.Conflicts
			}
		case Release:
			out.Seats = d.Released
		}
		if !out.OK && !expected[env.Code] {
			w.t.Errorf("%s %v: unexpected answer %d %s", in.Kind, in, status, env.Code)
		}
	}
	w.rec.add(w.id, in, call, out, ret)
	return out, d
}

// expected are the refusals the load may meet; any other is a test error.
var expected = map[string]bool{"TICKET_SOLD_OUT": true, "TICKET_QUANTITY_EXCEEDS_CAPACITY": true,
	"SEAT_CONFLICT": true, "SEAT_NOT_HELD": true, "CONFIRM_FAILED": true, "DUPLICATE_IN_PROGRESS": true}

func (w *worker) gaPart(ev, tk int) string { return fmt.Sprintf("ga:%s/%s", gaEvent(ev), gaTicket(tk)) }

func (w *worker) reserveGA() {
	ev, tk := w.rnd.IntN(w.r.GAEvents), w.rnd.IntN(w.r.GATickets)
	q := 1 + w.rnd.IntN(2)
	key := servertest.NewKey()
	in := Input{Kind: Reserve, Part: w.gaPart(ev, tk), Cap: w.r.capOf(tk), Qty: q, Key: key}
	body := servertest.Buyer(map[string]any{"selectedTicketId": gaTicket(tk), "quantity": q})
	// A partner whose reserve got no answer sends it again with the same
	// Idempotency-Key, as README asks: it must get the same order back,
	// or the attempt runs afresh if the first made none.
	for try := 0; ; try++ {
		out, d := w.do(in, "/events/"+gaEvent(ev)+"/checkout", map[string]string{"Idempotency-Key": key}, body)
		if out.OK {
			if !out.Duplicate || !slices.ContainsFunc(w.orders, func(o known) bool { return o.id == d.OrderID }) {
				o := known{id: d.OrderID, part: in.Part, cap: in.Cap, amount: d.Amount}
				w.orders = append(w.orders, o)
				w.shared.add(o)
			}
			return
		}
		if try == 5 || !out.Unknown && out.Code != "DUPLICATE_IN_PROGRESS" {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (w *worker) reserveSeats(ev int) {
	seats := slices.Clone(w.held[ev])
	in := Input{Kind: Reserve, Part: "seats:" + seatEvent(ev), Token: w.tokens[ev], Seats: seats}
	out, d := w.do(in, "/events/"+seatEvent(ev)+"/checkout", map[string]string{"Idempotency-Key": servertest.NewKey()},
		servertest.Buyer(map[string]any{"seatLabels": seats, "seatHoldToken": w.tokens[ev]}))
	if out.OK || out.Unknown {
		w.held[ev] = nil
	}
	if out.OK {
		o := known{id: d.OrderID, part: in.Part, amount: d.Amount}
		w.orders = append(w.orders, o)
		w.shared.add(o)
	}
}

func (w *worker) randomSeats() []string {
	n := 1 + w.rnd.IntN(2)
	var out []string
	for len(out) < n {
		l := seatLabel(1 + w.rnd.IntN(w.r.Seats))
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

func (w *worker) hold(ev int) {
	seats := w.randomSeats()
	in := Input{Kind: Hold, Part: "seats:" + seatEvent(ev), Token: w.tokens[ev], Seats: seats}
	out, _ := w.do(in, "/seating/events/"+seatEvent(ev)+"/hold", nil, map[string]any{"holdToken": w.tokens[ev], "seatLabels": seats})
	if out.OK {
		w.held[ev] = slices.Clone(out.Seats) // the history keeps out.Seats: never share it
	}
}

// release gives seats back: mostly some of those the worker holds, so
// that held seats return to the pool and the holds and reserves keep
// contending for them to the end of the run; else random ones (most held
// by others or by no one, which the release must leave as they are).
func (w *worker) release(ev int) {
	seats := w.randomSeats()
	if own := w.held[ev]; len(own) > 0 && w.rnd.IntN(4) > 0 {
		seats = slices.Clone(own)
		w.rnd.Shuffle(len(seats), func(i, j int) { seats[i], seats[j] = seats[j], seats[i] })
		seats = seats[:1+w.rnd.IntN(len(seats))]
	}
	in := Input{Kind: Release, Part: "seats:" + seatEvent(ev), Token: w.tokens[ev], Seats: seats}
	out, _ := w.do(in, "/seating/events/"+seatEvent(ev)+"/release", nil, map[string]any{"holdToken": w.tokens[ev], "seatLabels": seats})
	if out.OK || out.Unknown {
		w.held[ev] = slices.DeleteFunc(w.held[ev], func(l string) bool { return slices.Contains(seats, l) })
	}
}

// pick chooses one of the worker's orders, the recent ones more often (they
// are the pending ones, whose confirms race for the last tickets).
func (w *worker) pick() known {
	if w.rnd.IntN(4) == 0 {
		if o, ok := w.shared.pick(w.rnd); ok {
			return o
		}
	}
	n := len(w.orders)
	if w.rnd.IntN(3) > 0 && n > 3 {
		return w.orders[n-1-w.rnd.IntN(3)]
	}
	return w.orders[w.rnd.IntN(n)]
}

func (w *worker) confirm(o known) {
	ref := "ref-" + o.id // the same reference every time: a repeat is a duplicate
	sig := channel.Signature(chSigning, o.id, o.amount, ref)
	w.do(Input{Kind: Confirm, Part: o.part, Cap: o.cap, Order: o.id}, "/orders/confirm", map[string]string{"x-service-signature": sig},
		fmt.Sprintf(`{"orderId":%q,"amount":%s,"partnerReference":%q}`, o.id, o.amount, ref))
}

func (w *worker) status(o known) {
	w.do(Input{Kind: Status, Part: o.part, Cap: o.cap, Order: o.id}, "/orders/status", nil, map[string]string{"orderId": o.id})
}

func (w *worker) loop() {
	for range w.r.OpsPerWorker {
		ev := w.rnd.IntN(w.r.SeatEvents)
		switch x := w.rnd.IntN(100); {
		case x < 20:
			w.reserveGA()
		case x < 30:
			if len(w.held[ev]) > 0 {
				w.reserveSeats(ev)
			} else {
				w.hold(ev)
			}
		case x < 55 && len(w.orders) > 0:
			w.confirm(w.pick())
		case x < 70 && len(w.orders) > 0:
			w.status(w.pick())
		case x < 90:
			w.hold(ev)
		default:
			w.release(ev)
		}
	}
}

// linearize runs r against a fresh stack and checks the history.
func linearize(t *testing.T, r run) {
	if r.Base > 0 {
		own := redistest.StartServer(t)
		p, err := StartLatencyProxy(own.Addr, r.Base, r.Jitter)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		t.Setenv("REDIS_URL", "redis://"+p.Addr)
	}
	s := servertest.Start(t, servertest.Options{OrderTTL: time.Hour, SeatHoldTTL: 30 * time.Minute})
	s.Apply(t, r.catalog())
	client := &fasthttp.Client{MaxConnsPerHost: 4 * r.Workers, ReadTimeout: time.Minute, WriteTimeout: time.Minute}
	rec := &recorder{t0: time.Now(), outcomes: map[string]int{}}
	workers := make([]*worker, r.Workers)
	sh := &shared{}
	for i := range workers {
		w := &worker{t: t, shared: sh, r: r, id: i, base: s.URL, client: client, rec: rec, rnd: rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano()))),
			tokens: map[int]string{}, held: map[int][]string{}}
		for ev := range r.SeatEvents {
			// Tokens are made before the history starts: a token is
			// state of its own, not part of what the model checks.
			resp := s.Do(t, "POST", "/v1/channel/seating/events/"+seatEvent(ev)+"/hold-token", servertest.Keyed("lin"), map[string]any{})
			var d data
			if resp.Status != 200 {
				t.Fatalf("hold-token: %s", resp)
			}
			resp.Decode(t, &d)
			w.tokens[ev] = d.HoldToken
		}
		workers[i] = w
	}
	start := time.Now()
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(w.loop)
	}
	wg.Wait()
	took := time.Since(start)

	unknown := 0
	for _, op := range rec.ops {
		if op.Output.(Output).Unknown {
			unknown++
		}
	}
	checkStart := time.Now()
	res, info := porcupine.CheckOperationsVerbose(Model.ToModel(), rec.ops, 2*time.Minute)
	checked := time.Since(checkStart)
	parts := len(Model.Partition(rec.ops))
	if res != porcupine.Ok {
		path := filepath.Join(os.TempDir(), fmt.Sprintf("ticketd-linear-%s-%d.html", strings.ReplaceAll(t.Name(), "/", "_"), time.Now().UnixNano()))
		if err := porcupine.VisualizePath(Model.ToModel(), info, path); err == nil {
			t.Logf("porcupine's view of the history: %s", path)
		}
		describe(t, rec.ops)
		t.Fatalf("history of %d ops (%d unknown) is %s", len(rec.ops), unknown, res)
	}
	if r.ShortDeadline == 0 && r.Base == 0 && unknown > 0 {
		t.Errorf("%d calls without an answer (5xx or a transport error) with no fault injected", unknown)
	}
	if r.ShortDeadline > 0 && unknown == 0 {
		t.Errorf("no call timed out: the run did not exercise unknown outcomes")
	}
	// A load that sold everything out early checks little after that: the
	// history's last quarter must still have reserves and holds that
	// succeed beside holds that conflict.
	qs := quarters(rec.ops)
	if q := qs[3]; q.reserveOK == 0 || q.holdOK == 0 || q.conflict == 0 {
		t.Errorf("the run's last quarter no longer contends: %s", q)
	}
	faultreport.Print(t, faultreport.Report{
		Injected: r.Injected,
		Load: fmt.Sprintf("%d clients, %d ops in %s over %d GA ticket types (capacities %d to %d) and %d seated events (%d seats): %s",
			r.Workers, len(rec.ops), took.Round(time.Millisecond), r.GAEvents*r.GATickets, r.capOf(0), r.Cap, r.SeatEvents, r.Seats, outcomes(rec.outcomes)),
		Counts: fmt.Sprintf("history of %d ops (%d of unknown outcome) linearizable: porcupine %s in %d partitions, %s; by quarter of the history: %s; %s; %s; %s",
			len(rec.ops), unknown, res, parts, checked.Round(time.Millisecond), qs[0], qs[1], qs[2], qs[3]),
	})
}

// quarter counts, in one quarter of the history (its calls in the order
// they were made), the calls that change state and what became of them:
// the contention the history holds there.
type quarter struct {
	reserveOK, soldOut int // reserves answered with an order; refused, sold out
	holdOK, conflict   int // holds answered ok; SEAT_CONFLICT
	paid, failed       int // first confirms answered paid; confirms failed sold_out
}

func (q quarter) String() string {
	return fmt.Sprintf("reserve %d ok/%d sold out, hold %d ok/%d conflict, confirm %d paid/%d sold out",
		q.reserveOK, q.soldOut, q.holdOK, q.conflict, q.paid, q.failed)
}

// quarters splits the history, in call order, into four equal parts.
func quarters(ops []porcupine.Operation) [4]quarter {
	var qs [4]quarter
	ops = slices.Clone(ops)
	slices.SortFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	for i, op := range ops {
		in, out := op.Input.(Input), op.Output.(Output)
		q := &qs[i*4/len(ops)]
		switch {
		case out.Unknown:
		case in.Kind == Reserve && out.OK && !out.Duplicate:
			q.reserveOK++
		case in.Kind == Reserve && (out.Code == "TICKET_SOLD_OUT" || out.Code == "TICKET_QUANTITY_EXCEEDS_CAPACITY"):
			q.soldOut++
		case in.Kind == Hold && out.OK:
			q.holdOK++
		case in.Kind == Hold && out.Code == "SEAT_CONFLICT":
			q.conflict++
		case in.Kind == Confirm && out.Status == "paid" && !out.Duplicate:
			q.paid++
		case in.Kind == Confirm && out.Reason == "sold_out":
			q.failed++
		}
	}
	return qs
}

func outcomes(m map[string]int) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
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

// describe logs the operations of each partition the checker refuses, in
// call order, so a failure can be read without the HTML view.
func describe(t *testing.T, h []porcupine.Operation) {
	m := Model.ToModel()
	for _, part := range Model.Partition(h) {
		if porcupine.CheckOperations(m, part) {
			continue
		}
		part = slices.Clone(part)
		sort.Slice(part, func(i, j int) bool { return part[i].Call < part[j].Call })
		t.Logf("partition %s is not linearizable; its %d ops:", part[0].Input.(Input).Part, len(part))
		for i, op := range part {
			if i == 200 {
				t.Logf("  ...")
				break
			}
			ret := "inf"
			if op.Return != math.MaxInt64 {
				ret = time.Duration(op.Return).String()
			}
			t.Logf("  c%d [%s, %s] %s", op.ClientId, time.Duration(op.Call), ret, m.DescribeOperation(op.Input, op.Output))
		}
	}
}
