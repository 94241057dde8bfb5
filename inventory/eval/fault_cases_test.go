package eval_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/holds"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/pricing"
	"github.com/ticketd/ticketd/inventory/registrations"
	"github.com/ticketd/ticketd/inventory/reply"
	"github.com/ticketd/ticketd/inventory/room"
)

// The cases of TestFaultScriptsCheckBeforeTheyWrite. Each reaches the
// paths where its scripts write, with the state a real caller meets:
// partner orders and storefront registrations go through their packages
// (orders, registrations), the rest runs the scripts with the keys and
// arguments their headers (and Go wrappers) give.

// readOnlyScripts never write; every other script must have a case that
// reaches a write.
var readOnlyScripts = map[string]bool{"order_status": true, "reg_status": true, "discount_left": true, "redis_time": true}

// The event every case sells, and its partition.
const ev = "ev1"

var part = keys.Partition(ev)

type fixture struct {
	t      *testing.T
	ctx    context.Context
	c      rueidis.Client
	sp     keys.Space
	orders *orders.Service
	regs   *registrations.Service
	room   *room.Service
	// ids set by setup for act
	id, tok string
}

func newFixture(t *testing.T, d *faultDB) *fixture {
	f := &fixture{t: t, ctx: context.Background(), c: d.c}
	f.orders = &orders.Service{Redis: d.c, Space: f.sp, OrderTTL: time.Minute, IDKey: []byte("fault-test-id-key")}
	f.regs = &registrations.Service{Redis: d.c, Space: f.sp, Orders: f.orders, CheckoutTTL: time.Minute, HoldTTL: 10 * time.Second}
	f.room = &room.Service{Redis: d.c, Space: f.sp, Key: []byte("fault-test-room-key")}
	return f
}

var loaded = map[string]*eval.Script{}

// script runs a script as its wrapper would and returns its reply.
func (f *fixture) script(name string, ks []string, args ...string) []rueidis.RedisMessage {
	f.t.Helper()
	s, ok := loaded[name]
	if !ok {
		s = eval.Load(name)
		loaded[name] = s
	}
	arr, err := eval.Array(f.ctx, f.c, s, ks, args)
	if err != nil {
		f.t.Fatalf("%s: %v", name, err)
	}
	return arr
}

func (f *fixture) cmd(args ...string) {
	f.t.Helper()
	if err := f.c.Do(f.ctx, f.c.B().Arbitrary(args[0]).Args(args[1:]...).Build()).Error(); err != nil {
		f.t.Fatalf("%v: %v", args, err)
	}
}

func (f *fixture) ok(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

// event is a live partition with an event: capacities, some sold, a
// booked seat, a used discount code, an expired discount hold (reserve
// and register drop it), and a buyer's admissions.
func (f *fixture) event() {
	f.cmd("SET", f.sp.Live(part), "g1")
	f.cmd("HSET", f.sp.Caps(ev), "t:a", "10", "ev", "100", "t:b", "5")
	f.cmd("HSET", f.sp.Sold(ev), "t:a", "1", "ev", "1")
	f.cmd("HSET", f.sp.Booked(ev), "Z-9", "oother.ev1")
	f.cmd("HSET", f.sp.DiscountUsed(ev), "SAVE", "1")
	past := strconv.FormatInt(time.Now().Add(-time.Hour).UnixMilli(), 10)
	f.cmd("ZADD", f.sp.DiscountHolds(ev), past, "SAVE\nogone.ev1")
	f.cmd("HSET", f.sp.DiscountHeld(ev), "SAVE", "1")
	f.cmd("HSET", f.sp.Buyers(ev), orders.BuyerKey("other@example.com"), "1")
	// another buyer's registration awaiting payment, counted for another
	// client, and that client's live hold token
	f.cmd("HSET", f.sp.Unpaid(ev), orders.BuyerKey("other@example.com"), "oother2.ev1")
	f.cmd("HSET", f.sp.IPRegistrations(ev), otherClient.Key, "1")
	f.cmd("ZADD", f.sp.IPTokens(ev, otherClient.Key), nowMs(time.Hour), "othertok1")
}

// The clients the cases count holds for (lib/holds).
var (
	client      = holds.For(nil, "203.0.113.9", 8)
	otherClient = holds.For(nil, "198.51.100.0/64", 8)
)

// hold takes a hold token and holds labels with it, as the seat engine does.
func (f *fixture) hold(labels ...string) {
	f.tok = "holdtok" + strconv.Itoa(len(labels))
	f.tokenOnly()
	ks := []string{f.sp.Hold(ev, f.tok), f.sp.Booked(ev), f.sp.Live(part), f.sp.SeatHolds(ev), f.sp.OrderSeats(ev), f.sp.RegSeats(ev), f.sp.RoomPlaces(ev)}
	args := []string{f.tok, "10", strconv.Itoa(len(labels)), "off", "0"}
	if code, _ := reply.Of(f.script("seat_hold", ks, append(args, labels...)...)); code != reply.OK {
		f.t.Fatalf("seat_hold: %v", code)
	}
}

// tokenKeys are seat_token's keys for a token counted for client ("": none).
func (f *fixture) tokenKeys(tok, client string) []string {
	return []string{f.sp.Hold(ev, tok), f.sp.IPRegistrations(ev), f.sp.IPTokens(ev, client),
		f.sp.Room(ev), f.sp.RoomPlaces(ev), f.sp.RoomPasses(ev), f.sp.RoomAudit(ev)}
}

func (f *fixture) tokenOnly() {
	if f.tok == "" {
		f.tok = "holdtok0"
	}
	f.script("seat_token", f.tokenKeys(f.tok, client.Key), "600000", f.tok, client.Key, "8", "")
}

var seq int

func (f *fixture) reserveReq(claims map[string]int64, labels []string, code string) orders.ReserveRequest {
	seq++
	r := orders.ReserveRequest{EventID: ev, Caller: "ch:c", ChannelID: "c",
		IdempotencyKey: "k" + strconv.Itoa(seq), Fingerprint: "fp" + strconv.Itoa(seq), Total: 1000, Claims: claims,
		SeatLabels: labels, HoldToken: f.tok, MaxPerBuyer: 6,
		Record: orders.Record{EventID: ev, BuyerEmail: "buyer@example.com", Tickets: []orders.Ticket{{Label: "GA"}}}}
	if code != "" {
		r.DiscountCode, r.DiscountMaxUses = code, 5
	}
	return r
}

func (f *fixture) reserve(claims map[string]int64, labels []string, code string) {
	f.t.Helper()
	r, err := f.orders.Reserve(f.ctx, f.reserveReq(claims, labels, code))
	f.ok(err)
	f.id = r.OrderID
}

func (f *fixture) confirm(ref string) {
	_, _ = f.orders.Confirm(f.ctx, orders.ConfirmRequest{ChannelID: "c", OrderID: f.id, Amount: 1000, Reference: ref})
}

func (f *fixture) regReq(total int64, labels []string, code string) registrations.Request {
	q := pricing.Quote{Total: 0, Claims: map[string]int64{"t:a": 2, "ev": 2}, SeatLabels: labels}
	q.Total = 0
	if total > 0 {
		q.Total = 1000
	}
	if code != "" {
		q.DiscountCode, q.DiscountMaxUses = code, 5
	}
	return registrations.Request{EventID: ev, TenantID: "t1", Buyer: registrations.Buyer{Name: "B", Email: "buyer@example.com"},
		Quote: q, HoldToken: f.tok, MaxPerBuyer: 6, Client: client}
}

func (f *fixture) register(total int64, labels []string, code string) {
	f.t.Helper()
	r, err := f.regs.Register(f.ctx, f.regReq(total, labels, code))
	f.ok(err)
	f.id = r.ID
}

func (f *fixture) pay(amount int64) {
	_, _ = f.regs.Pay(f.ctx, registrations.Payment{RegistrationID: f.id, Processor: "card", PaymentID: "cs_x",
		Amount: money.Cents(amount), Currency: "usd", TenantID: "t1"})
}

// attach records the checkout session pay pays (cs_x), as the storefront
// does before the buyer can pay it: reg_pay takes no other.
func (f *fixture) attach() { f.ok(f.regs.AttachSession(f.ctx, f.id, "card", "cs_x")) }

func (f *fixture) session() string { return "cs_abc_" + f.id }

func (f *fixture) sessionKey() string {
	k, ok := f.sp.PaySession(f.session())
	if !ok {
		f.t.Fatalf("session key of %s", f.session())
	}
	return k
}

// roomCfg is a first-come room whose T0 has passed, with passes of ttl.
func roomCfg(ttl time.Duration) *catalog.Room {
	return &catalog.Room{OpensAt: time.Now().Add(-time.Hour), SalesStartAt: time.Now().Add(-time.Minute), PassTTL: ttl, PerBuyer: 4,
		Stock: 100}
}

func nowMs(d time.Duration) string { return strconv.FormatInt(time.Now().Add(d).UnixMilli(), 10) }

var faultCases = []faultCase{
	// partner orders
	{name: "reserve GA with a limited code and a buyer limit", setup: (*fixture).event,
		act: func(f *fixture) { f.reserve(map[string]int64{"t:a": 2, "ev": 2}, nil, "SAVE") }},
	{name: "reserve held seats with a limited code",
		setup: func(f *fixture) { f.event(); f.hold("A-1", "A-2") },
		act:   func(f *fixture) { f.reserve(map[string]int64{"ev": 2}, []string{"A-1", "A-2"}, "SAVE") }},
	{name: "reserve refused (sold out) releases its idempotency key", setup: (*fixture).event,
		act: func(f *fixture) {
			_, _ = f.orders.Reserve(f.ctx, f.reserveReq(map[string]int64{"t:a": 20, "ev": 20}, nil, ""))
		}},
	{name: "confirm GA with a limited code and a buyer limit",
		setup: func(f *fixture) { f.event(); f.reserve(map[string]int64{"t:a": 2, "ev": 2}, nil, "SAVE") },
		act:   func(f *fixture) { f.confirm("ref1") }},
	{name: "confirm held seats with a limited code",
		setup: func(f *fixture) {
			f.event()
			f.hold("A-1", "A-2")
			f.reserve(map[string]int64{"ev": 2}, []string{"A-1", "A-2"}, "SAVE")
		},
		act: func(f *fixture) { f.confirm("ref1") }},
	{name: "confirm without a worker (capped stream)",
		setup: func(f *fixture) {
			f.event()
			f.orders.StreamCap = 10
			f.hold("A-1")
			f.reserve(map[string]int64{"ev": 1}, []string{"A-1"}, "SAVE")
		},
		act: func(f *fixture) { f.orders.StreamCap = 10; f.confirm("ref1") }},
	{name: "confirm fails (sold out meanwhile): seats and code released",
		setup: func(f *fixture) {
			f.event()
			f.hold("A-1", "A-2")
			f.reserve(map[string]int64{"t:a": 2, "ev": 2}, []string{"A-1", "A-2"}, "SAVE")
			f.cmd("HSET", f.sp.Sold(ev), "t:a", "10")
		},
		act: func(f *fixture) { f.confirm("ref1") }},
	{name: "confirm again: a duplicate",
		setup: func(f *fixture) {
			f.event()
			f.reserve(map[string]int64{"t:a": 1, "ev": 1}, nil, "")
			f.confirm("ref1")
		},
		act: func(f *fixture) { f.confirm("ref1") }},
	{name: "order status and discount left",
		setup: func(f *fixture) { f.event(); f.reserve(map[string]int64{"t:a": 1, "ev": 1}, nil, "SAVE") },
		act: func(f *fixture) {
			_, _, err := f.orders.Status(f.ctx, f.id)
			f.ok(err)
			_, err = f.orders.DiscountLeft(f.ctx, ev, "SAVE", 5)
			f.ok(err)
		}},

	// seats
	{name: "seat token", setup: (*fixture).event, act: func(f *fixture) { f.tokenOnly() }},
	{name: "seat token of a partner (no client)",
		act: func(f *fixture) {
			f.script("seat_token", f.tokenKeys("partnertok", ""), "600000", "partnertok", "", "0", "")
		}},
	{name: "seat token dropped (best-available held nothing with it)",
		setup: func(f *fixture) { f.event(); f.tokenOnly() },
		act: func(f *fixture) {
			f.script("seat_token_drop", []string{f.sp.Hold(ev, f.tok), f.sp.IPTokens(ev, client.Key)}, f.tok)
		}},
	{name: "seat hold with the single-seat rule",
		setup: func(f *fixture) { f.event(); f.hold("A-2") },
		act: func(f *fixture) {
			ks := []string{f.sp.Hold(ev, f.tok), f.sp.Booked(ev), f.sp.Live(part), f.sp.SeatHolds(ev), f.sp.OrderSeats(ev), f.sp.RegSeats(ev), f.sp.RoomPlaces(ev)}
			f.script("seat_hold", ks, f.tok, "10", "2", "lenient", "0", "A-3", "A-4", "A-1", "A-5")
		}},
	{name: "Redis' clock in an event's slot (best-available's read with a rate limit along)",
		setup: func(f *fixture) { f.event() },
		act: func(f *fixture) {
			f.script("redis_time", []string{f.sp.Booked(ev)})
		}},
	{name: "seat extend",
		setup: func(f *fixture) { f.event(); f.hold("A-1", "A-2") },
		act: func(f *fixture) {
			f.script("seat_extend", []string{f.sp.Hold(ev, f.tok), f.sp.IPTokens(ev, client.Key), f.sp.SeatHolds(ev),
				f.sp.RoomPlaces(ev), f.sp.RoomPasses(ev)}, f.tok, "600000", "1800000", client.Key)
		}},
	{name: "seat release of some, with the single-seat rule",
		setup: func(f *fixture) { f.event(); f.hold("A-1", "A-2", "A-3") },
		act: func(f *fixture) {
			f.script("seat_release", []string{f.sp.Hold(ev, f.tok), f.sp.Booked(ev), f.sp.SeatHolds(ev), f.sp.OrderSeats(ev), f.sp.RegSeats(ev)},
				f.tok, "0", "1", "lenient", "A-3", "A-4")
		}},
	{name: "seat release of all",
		setup: func(f *fixture) { f.event(); f.hold("A-1", "A-2") },
		act: func(f *fixture) {
			f.script("seat_release", []string{f.sp.Hold(ev, f.tok), f.sp.Booked(ev), f.sp.SeatHolds(ev), f.sp.OrderSeats(ev), f.sp.RegSeats(ev)},
				f.tok, "1", "0", "off")
		}},

	// storefront registrations
	{name: "register (paid) GA with a limited code and a buyer limit", setup: (*fixture).event,
		act: func(f *fixture) { f.register(1000, nil, "SAVE") }},
	{name: "register (paid) held seats",
		setup: func(f *fixture) { f.event(); f.hold("A-1", "A-2") },
		act:   func(f *fixture) { f.register(1000, []string{"A-1", "A-2"}, "SAVE") }},
	{name: "register free held seats with a code",
		setup: func(f *fixture) { f.event(); f.hold("A-1", "A-2") },
		act:   func(f *fixture) { f.register(0, []string{"A-1", "A-2"}, "SAVE") }},
	{name: "register free with an unlimited code", setup: (*fixture).event,
		act: func(f *fixture) {
			r := f.regReq(0, nil, "OPEN")
			r.Quote.DiscountMaxUses = 0
			_, err := f.regs.Register(f.ctx, r)
			f.ok(err)
		}},
	{name: "register free without a worker (capped stream)",
		setup: func(f *fixture) { f.event(); f.regs.StreamCap = 10 },
		act:   func(f *fixture) { f.regs.StreamCap = 10; f.register(0, nil, "") }},
	{name: "register again: the buyer's earlier registration (seats, a limited code) is released first",
		setup: func(f *fixture) { f.event(); f.hold("A-1", "A-2"); f.register(1000, []string{"A-1", "A-2"}, "SAVE") },
		act:   func(f *fixture) { f.register(1000, nil, "SAVE") }},
	{name: "pay a registration with seats and a limited code",
		setup: func(f *fixture) {
			f.event()
			f.hold("A-1", "A-2")
			f.register(1000, []string{"A-1", "A-2"}, "SAVE")
			f.attach()
		},
		act: func(f *fixture) { f.pay(1000) }},
	{name: "pay a registration counted under an older generation",
		setup: func(f *fixture) {
			f.event()
			f.hold("A-1")
			f.register(1000, []string{"A-1"}, "SAVE")
			f.attach()
			f.cmd("SET", f.sp.Live(part), "g2")
		},
		act: func(f *fixture) { f.regs.StreamCap = 10; f.pay(1000) }},
	{name: "pay a cancelled event: refund, inventory given back",
		setup: func(f *fixture) {
			f.event()
			f.hold("A-1", "A-2")
			f.register(1000, []string{"A-1", "A-2"}, "SAVE")
			f.attach()
		},
		act: func(f *fixture) {
			f.regs.Event = func(string) (string, bool, bool) { return "t1", true, true }
			f.pay(1000)
		}},
	{name: "pay the wrong amount: refused, nothing written",
		setup: func(f *fixture) {
			f.event()
			f.hold("A-1", "A-2")
			f.register(1000, []string{"A-1", "A-2"}, "SAVE")
			f.attach()
		},
		act: func(f *fixture) { f.pay(999) }},
	{name: "pay a session ticketd never opened: refused, nothing written",
		setup: func(f *fixture) { f.event(); f.register(1000, nil, "") },
		act:   func(f *fixture) { f.pay(1000) }},
	{name: "pay a registration ticketd lost",
		setup: func(f *fixture) { f.event(); f.id = f.orders.NewID(ev, registrations.Owner("t1")) },
		act:   func(f *fixture) { f.pay(1000) }},
	{name: "expire a registration with seats, a limited code and a buyer limit",
		setup: func(f *fixture) {
			f.event()
			f.hold("A-1", "A-2")
			f.regs.CheckoutTTL = time.Millisecond
			f.register(1000, []string{"A-1", "A-2"}, "SAVE")
			time.Sleep(5 * time.Millisecond)
		},
		act: func(f *fixture) {
			_, err := f.regs.Expire(f.ctx, f.id)
			f.ok(err)
		}},
	{name: "expire a registration no longer held",
		setup: func(f *fixture) {
			f.event()
			f.register(1000, nil, "")
			okey, _ := f.sp.Order(f.id)
			f.cmd("HSET", okey, "st", "paid")
		},
		act: func(f *fixture) {
			_, err := f.regs.Expire(f.ctx, f.id)
			f.ok(err)
		}},
	{name: "attach checkout sessions (the first moves the window), grace, status",
		setup: func(f *fixture) {
			f.event()
			f.register(1000, nil, "")
		},
		act: func(f *fixture) {
			f.ok(f.regs.AttachSession(f.ctx, f.id, "card", "cs_one"))
			f.ok(f.regs.AttachSession(f.ctx, f.id, "wallet", "wp_two"))
			okey, _ := f.sp.Order(f.id)
			f.script("reg_grace", []string{okey, f.sp.Expiry(part)}, f.id, "600000")
			_, _, err := f.regs.Get(f.ctx, f.id)
			f.ok(err)
		}},

	// hosted payment sessions (inventory/payments)
	{name: "open a payment session",
		setup: func(f *fixture) { f.event(); f.register(1000, nil, "") },
		act: func(f *fixture) {
			f.script("paysession_open", []string{f.sessionKey()}, nowMs(time.Minute), "3600000",
				"reg", f.id, "amt", "1000", "cur", "USD")
		}},
	{name: "pay, close and retry payment sessions",
		setup: func(f *fixture) {
			f.event()
			f.register(1000, nil, "")
			f.script("paysession_open", []string{f.sessionKey()}, nowMs(time.Minute), "3600000", "reg", f.id, "amt", "1000", "proc", "card")
			f.cmd("ZADD", f.sp.PayDue(part, "card"), nowMs(-time.Minute), "cs_other_"+f.id)
		},
		act: func(f *fixture) {
			due := f.sp.PayDue(part, "card")
			f.script("paysession_close", []string{f.sessionKey()}, "cancelled")
			f.cmd("HSET", f.sessionKey(), "st", "open")
			f.script("paysession_pay", []string{f.sessionKey(), due}, f.session(), "evt_1", "3600000", "0", "card", "")
			f.script("paydue_retry", []string{f.sessionKey(), due}, f.session(), "1000", "60000")
			other, _ := f.sp.PaySession("cs_other_" + f.id)
			f.script("paydue_retry", []string{other, due}, "cs_other_"+f.id, "1000", "60000")
		}},
	{name: "pay an expired payment session",
		setup: func(f *fixture) {
			f.event()
			f.register(1000, nil, "")
			f.script("paysession_open", []string{f.sessionKey()}, nowMs(-time.Second), "3600000", "reg", f.id, "proc", "card")
		},
		act: func(f *fixture) {
			f.script("paysession_pay", []string{f.sessionKey(), f.sp.PayDue(part, "card")}, f.session(), "evt_1", "3600000", "0", "card", "")
		}},
	{name: "claim and extend due deliveries",
		setup: func(f *fixture) {
			f.cmd("ZADD", f.sp.PayDue(part, "card"), nowMs(-time.Minute), "cs_a_o1.ev1", nowMs(-time.Second), "cs_b_o2.ev1",
				"4102444800000", "cs_c_o3.ev1")
		},
		act: func(f *fixture) {
			due := f.sp.PayDue(part, "card")
			f.script("paydue_claim", []string{due}, "10", "30000")
			// the deadline a claim set (a replay's claim sets another)
			f.script("paydue_extend", []string{due}, "cs_c_o3.ev1", "4102444800000", "30000")
		}},

	// sync worker: ack and takeover of paid entries
	{name: "ack paid entries",
		setup: func(f *fixture) {
			f.event()
			f.reserve(map[string]int64{"t:a": 1, "ev": 1}, nil, "")
			f.confirm("r1")
			f.reserve(map[string]int64{"t:a": 1, "ev": 1}, nil, "")
			f.confirm("r2")
			f.cmd("XGROUP", "CREATE", f.sp.Paid(part), "sync", "0")
			f.cmd("XREADGROUP", "GROUP", "sync", "w1", "COUNT", "10", "STREAMS", f.sp.Paid(part), ">")
		},
		act: func(f *fixture) {
			stream := f.sp.Paid(part)
			ents, err := f.c.Do(f.ctx, f.c.B().Xrange().Key(stream).Start("-").End("+").Build()).AsXRange()
			f.ok(err)
			ks, args := []string{stream}, []string{"sync", "3600000"}
			for _, e := range ents {
				o, _ := f.sp.Order(e.FieldValues["order"])
				ks = append(ks, o)
				args = append(args, e.ID)
			}
			f.script("paid_ack", ks, args...)
		}},
	{name: "take over a stopped worker's entries",
		setup: func(f *fixture) {
			f.event()
			f.reserve(map[string]int64{"t:a": 1, "ev": 1}, nil, "")
			f.confirm("r1")
			f.cmd("XGROUP", "CREATE", f.sp.Paid(part), "sync", "0")
			f.cmd("XREADGROUP", "GROUP", "sync", "dead", "COUNT", "10", "STREAMS", f.sp.Paid(part), ">")
			f.cmd("XGROUP", "CREATECONSUMER", f.sp.Paid(part), "sync", "idle")
		},
		act: func(f *fixture) {
			f.script("worker_takeover", []string{f.sp.Paid(part)}, "sync", "dead", "w2", "100")
			f.script("worker_takeover", []string{f.sp.Paid(part)}, "sync", "idle", "w2", "100")
		}},

	// rebuild and catalog
	{name: "restore an event from Postgres",
		setup: func(f *fixture) { f.event(); f.cmd("DEL", f.sp.Live(part)) },
		act: func(f *fixture) {
			f.script("event_restore", []string{f.sp.Caps(ev), f.sp.Sold(ev), f.sp.Booked(ev), f.sp.DiscountUsed(ev),
				f.sp.Live(part), f.sp.Buyers(ev)},
				"2", "t:a", "10", "ev", "100", "1", "t:a", "3", "1", "A-1", "oa.ev1", "1", "SAVE", "2", "1", "bk1", "2")
		}},
	{name: "resume a held event's sales",
		setup: func(f *fixture) {
			f.event()
			f.cmd("HSET", f.sp.Sold(ev), "ev", "10", "paid", "10", "held", "3")
		},
		act: func(f *fixture) {
			f.script("sales_resume", []string{f.sp.Sold(ev), f.sp.Live(part)}, "release")
			f.cmd("HSET", f.sp.Sold(ev), "held", "2")
			f.script("sales_resume", []string{f.sp.Sold(ev), f.sp.Live(part)}, "reconcile")
		}},
	{name: "apply an event's capacities",
		setup: func(f *fixture) {
			f.event()
			f.cmd("HSET", f.sp.Caps(ev), "t:old", "4")
			f.cmd("HSET", f.sp.Sold(ev), "t:old", "2")
		},
		act: func(f *fixture) {
			f.script("catalog_caps", []string{f.sp.Caps(ev), f.sp.Sold(ev), f.sp.Live(part)}, "2", "t:a", "12", "ev", "120", "1", "t:b")
		}},

	// Redis state generations, leases, rate limits
	{name: "state tick and stale",
		setup: func(f *fixture) {
			f.cmd("HSET", f.sp.State(), "status", "live", "gen", "g1", "seq", "5")
			f.cmd("SET", f.sp.CatalogVersion(), "3")
		},
		act: func(f *fixture) {
			f.script("state_tick", []string{f.sp.State(), f.sp.CatalogVersion()}, "")
			f.script("state_tick", []string{f.sp.State(), f.sp.CatalogVersion()}, "g1")
		}},
	// the waiting room: joins, admission, a pass burned by a registration,
	// a place that leaves, a pass that lapses
	{name: "room: join, admit, register with the pass, leave", setup: (*fixture).event,
		act: func(f *fixture) {
			cfg := roomCfg(time.Minute)
			a, err := f.room.Join(f.ctx, cfg, room.JoinRequest{EventID: ev, Email: "buyer@example.com", Quantity: 2})
			f.ok(err)
			b, err := f.room.Join(f.ctx, cfg, room.JoinRequest{EventID: ev, Email: "b@example.com", Device: "d1", Quantity: 1})
			f.ok(err)
			pass, err := f.room.CheckPass(ev, a.Pass, "buyer@example.com")
			f.ok(err)
			req := f.regReq(1000, nil, "")
			req.Pass = &pass
			_, err = f.regs.Register(f.ctx, req)
			f.ok(err)
			_, err = f.room.Leave(f.ctx, ev, b.QueueID)
			f.ok(err)
		}},
	{name: "room: a join behind a line takes its place without the admission step",
		setup: func(f *fixture) {
			f.event()
			cfg := roomCfg(time.Minute)
			cfg.SalesStartAt = time.Now().Add(time.Hour)
			_, err := f.room.Join(f.ctx, cfg, room.JoinRequest{EventID: ev, Email: "first@example.com", Quantity: 1})
			f.ok(err)
		},
		act: func(f *fixture) {
			cfg := roomCfg(time.Minute)
			cfg.SalesStartAt = time.Now().Add(time.Hour)
			_, err := f.room.Join(f.ctx, cfg, room.JoinRequest{EventID: ev, Email: "b@example.com", Device: "d1", Quantity: 1})
			f.ok(err)
		}},
	{name: "room: a late payment meets the units live passes hold",
		setup: func(f *fixture) {
			f.event()
			cfg := roomCfg(time.Minute)
			a, err := f.room.Join(f.ctx, cfg, room.JoinRequest{EventID: ev, Email: "buyer@example.com", Quantity: 2})
			f.ok(err)
			pass, err := f.room.CheckPass(ev, a.Pass, "buyer@example.com")
			f.ok(err)
			req := f.regReq(1000, nil, "")
			req.Pass = &pass
			r, err := f.regs.Register(f.ctx, req)
			f.ok(err)
			f.id = r.ID
			f.attach()
			// its window passes
			okey, _ := f.sp.Order(f.id)
			f.cmd("HSET", okey, "exp", nowMs(-time.Second))
			f.cmd("ZADD", f.sp.Expiry(part), "XX", nowMs(-time.Second), f.id)
			_, err = f.regs.Expire(f.ctx, f.id)
			f.ok(err)
			_, err = f.room.Join(f.ctx, cfg, room.JoinRequest{EventID: ev, Email: "b@example.com", Quantity: 2})
			f.ok(err)
		},
		act: func(f *fixture) { f.pay(1000) }},
	{name: "room: the nodes' tick admits and shows a fair room's shuffle key", setup: (*fixture).event,
		act: func(f *fixture) {
			cfg := roomCfg(time.Minute)
			cfg.Fair = true
			f.ok(f.room.Admit(f.ctx, cfg, ev))
		}},
	{name: "room: a pass lapses and the next in line is admitted", setup: (*fixture).event,
		act: func(f *fixture) {
			cfg := roomCfg(time.Millisecond)
			a, err := f.room.Join(f.ctx, cfg, room.JoinRequest{EventID: ev, Email: "a@example.com", Quantity: 1})
			f.ok(err)
			time.Sleep(5 * time.Millisecond)
			_, err = f.room.Status(f.ctx, cfg, ev, a.QueueID)
			f.ok(err)
		}},
	{name: "lease extend and release",
		setup: func(f *fixture) { f.cmd("SET", f.sp.CatalogLock(), "owner", "PX", "30000") },
		act: func(f *fixture) {
			f.script("lease_extend", []string{f.sp.CatalogLock()}, "owner", "60000")
			f.script("lease_release", []string{f.sp.CatalogLock()}, "owner")
		}},
	{name: "rate limit",
		setup: func(f *fixture) { f.cmd("SET", f.sp.RateLimit("b1"), "1", "PX", "60000") },
		act: func(f *fixture) {
			f.script("ratelimit", []string{f.sp.RateLimit("b1")}, "1000000", "5", "2")
		}},
}
