package scenario

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ticketd/ticketd/bench/integrity"
	"github.com/ticketd/ticketd/bench/load"
	"github.com/ticketd/ticketd/bench/redismem"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/money"
)

// The storefront scenarios (storefront_flash.go, storefront_seats.go) are
// buyers on a host's own website: every call carries the tenant's
// publishable key and an Origin on the key's domain list, and every buyer
// comes from a client address of its own (X-Forwarded-For, believed from
// the bench because ticketd runs with TICKETD_TRUSTED_PROXIES set to
// loopback), so the storefront's per-IP limits hold per buyer as they do
// in production. The bench plays the card processor: it signs the
// checkout.session.completed webhook with TICKETD_CARD_WEBHOOK_SECRET,
// as the processor would once the buyer paid on the hosted page.

// shop is the storefront of one part of a run.
type shop struct {
	key, host, origin     string
	successURL, cancelURL string
	// secret signs the card webhooks; evtPrefix starts their event ids.
	secret    string
	evtPrefix string
}

func newShop(env *Env, tag string) *shop {
	host := tag + "." + env.Run + ".bench.example.com"
	return &shop{key: "pk_" + env.Run + "_" + tag, host: host, origin: "https://" + host,
		successURL: "https://" + host + "/thanks?session={CHECKOUT_SESSION_ID}", cancelURL: "https://" + host + "/cancelled",
		secret: env.CardWebhookSecret, evtPrefix: "evt_" + env.Run + "_" + tag + "_"}
}

// doc is the shop's publishable key, its host the one domain on its list.
func (s *shop) doc() catalog.PublishableKey {
	return catalog.PublishableKey{Key: s.key, Domains: []string{s.host}, Enabled: true}
}

// onStorefront switches an event on for the storefront.
func onStorefront(ev catalog.Event) catalog.Event {
	ev.Storefront = true
	return ev
}

// buyerSeq numbers the buyers of the whole invocation, so no two runs of it
// share a client address within a rate-limit window.
var buyerSeq atomic.Uint32

// appendBuyerIP appends buyer n's client address, in 10.0.0.0/8.
func appendBuyerIP(dst []byte, n uint32) []byte {
	dst = append(dst, "10."...)
	dst = strconv.AppendUint(dst, uint64(n>>16&0xff), 10)
	dst = append(dst, '.')
	dst = strconv.AppendUint(dst, uint64(n>>8&0xff), 10)
	dst = append(dst, '.')
	return strconv.AppendUint(dst, uint64(n&0xff), 10)
}

// buyer is one worker's storefront client. Each arrival is a new buyer
// (next): its own client address and e-mail. Requests are built into
// reused buffers and answers scanned for the fields the flow needs.
type buyer struct {
	s      *shop
	worker int
	// n is this worker's arrival count, for webhook event ids; seq the
	// buyer's number in the invocation.
	n       uint64
	seq     uint32
	ip      []byte
	email   []byte
	reg     []byte // the registration id
	amount  money.Cents
	session []byte // the checkout session id
	evt     []byte
	body    []byte
	hook    []byte // the last webhook's body, for a redelivery
	// pass is the waiting room's pass register-guest sends (x-queue-pass);
	// empty for none.
	pass []byte
	sig  []byte
	mac  hash.Hash
	sum  []byte
}

func newBuyer(s *shop, worker int) *buyer {
	return &buyer{s: s, worker: worker, mac: hmac.New(sha256.New, []byte(s.secret))}
}

// next makes the worker's next arrival a new buyer.
func (b *buyer) next() {
	b.seq = buyerSeq.Add(1)
	b.n++
	b.ip = appendBuyerIP(b.ip[:0], b.seq)
	b.email = append(strconv.AppendUint(append(b.email[:0], "buyer-"...), uint64(b.seq), 10), "@bench.example.com"...)
	b.reg, b.session, b.amount, b.pass = b.reg[:0], b.session[:0], 0, b.pass[:0]
}

// prepare sets up w.Req as the buyer's storefront call.
func (b *buyer) prepare(w *load.Worker, method, path string) {
	w.Prepare(method, path)
	h := &w.Req.Header
	h.Set("x-service-key", b.s.key)
	h.Set("Origin", b.s.origin)
	h.SetBytesV("X-Forwarded-For", b.ip)
	if method == "POST" {
		h.SetContentType("application/json")
	}
}

// registerBody appends the register-guest body of the buyer; cart holds
// the cart's fields, without braces.
func (b *buyer) registerBody(dst []byte, eventID string, cart []byte) []byte {
	dst = append(dst, `{"eventId":"`...)
	dst = append(dst, eventID...)
	dst = append(dst, `","name":"Bench Buyer","email":"`...)
	dst = append(dst, b.email...)
	dst = append(dst, `",`...)
	dst = append(dst, cart...)
	return append(dst, '}')
}

// register sends register-guest (with the buyer's waiting-room pass,
// when it has one) and keeps the registration id and its
// total: the answer's total, or want when it carries none (its first
// "amount" may be payment.amount, what was paid so far). ok is true for a
// 200 with a registration id.
func (b *buyer) register(w *load.Worker, eventID string, cart []byte, want money.Cents) (status int, transport string, ok bool) {
	b.prepare(w, "POST", "/v1/storefront/register-guest")
	if len(b.pass) > 0 {
		w.Req.Header.SetBytesV("x-queue-pass", b.pass)
	}
	b.body = b.registerBody(b.body[:0], eventID, cart)
	w.Req.SetBodyRaw(b.body)
	if status, transport = w.Send(); transport != "" || status != 200 {
		return status, transport, false
	}
	body := w.Resp.Body()
	id := load.Field(body, `"registrationId":`)
	if len(id) == 0 || bytes.ContainsAny(id, `"\/`) {
		return status, "", false
	}
	b.reg = append(b.reg[:0], id...)
	b.amount = want
	if a, ok := parseCents(load.Field(body, `"total":`)); ok && a > 0 {
		b.amount = a
	}
	return status, "", true
}

// checkoutBody appends the create-checkout-session body of the buyer's
// registration; amount is selectedTicketAmount (unit price x quantity).
func (b *buyer) checkoutBody(dst []byte, eventID string, cart []byte, amount money.Cents) []byte {
	dst = append(dst, `{"eventId":"`...)
	dst = append(dst, eventID...)
	dst = append(dst, `","registrationId":"`...)
	dst = append(dst, b.reg...)
	dst = append(dst, `",`...)
	dst = append(dst, cart...)
	dst = append(dst, `,"selectedTicketAmount":`...)
	dst = amount.Append(dst)
	dst = append(dst, `,"successUrl":"`...)
	dst = append(dst, b.s.successURL...)
	dst = append(dst, `","cancelUrl":"`...)
	dst = append(dst, b.s.cancelURL...)
	return append(dst, `"}`...)
}

// checkout opens the card checkout session of the registration and keeps
// its id, the last path segment of the hosted page's URL.
func (b *buyer) checkout(w *load.Worker, eventID string, cart []byte, amount money.Cents) (status int, transport string, ok bool) {
	b.prepare(w, "POST", "/v1/storefront/card/create-checkout-session")
	b.body = b.checkoutBody(b.body[:0], eventID, cart, amount)
	w.Req.SetBodyRaw(b.body)
	if status, transport = w.Send(); transport != "" || status != 200 {
		return status, transport, false
	}
	id := sessionID(load.Field(w.Resp.Body(), `"url":`))
	if len(id) == 0 {
		return status, "", false
	}
	b.session = append(b.session[:0], id...)
	return status, "", true
}

// sessionID is the last path segment of a hosted page's URL
// (.../pay/card/<sessionId>, maybe with a query); nil when it is not one
// the webhook body can carry as it is.
func sessionID(u []byte) []byte {
	if i := bytes.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	id := u[bytes.LastIndexByte(u, '/')+1:]
	if len(id) == 0 || bytes.ContainsAny(id, `"\`) {
		return nil
	}
	return id
}

// webhookBody appends the processor's checkout.session.completed event
// for the buyer's session: paid, the registration's total in cents.
func (b *buyer) webhookBody(dst, eventID []byte) []byte {
	dst = append(dst, `{"id":"`...)
	dst = append(dst, eventID...)
	dst = append(dst, `","type":"checkout.session.completed","data":{"object":{"id":"`...)
	dst = append(dst, b.session...)
	dst = append(dst, `","payment_status":"paid","amount_total":`...)
	dst = strconv.AppendInt(dst, int64(b.amount), 10)
	dst = append(dst, `,"currency":"usd","client_reference_id":"`...)
	dst = append(dst, b.reg...)
	return append(dst, `"}}}`...)
}

// signature appends the Payment-Signature header of body signed at t:
// "t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>".
func (b *buyer) signature(dst []byte, t int64, body []byte) []byte {
	dst = append(dst, "t="...)
	ts := len(dst)
	dst = strconv.AppendInt(dst, t, 10)
	b.mac.Reset()
	b.mac.Write(dst[ts:])
	b.mac.Write([]byte{'.'})
	b.mac.Write(body)
	b.sum = b.mac.Sum(b.sum[:0])
	return hex.AppendEncode(append(dst, ",v1="...), b.sum)
}

// pay sends the processor's signed webhook for the buyer's session. With
// again, it delivers the last webhook once more (same event, signed anew),
// as a processor does when it missed the acknowledgement.
func (b *buyer) pay(w *load.Worker, again bool) (status int, transport string) {
	if !again {
		b.evt = strconv.AppendUint(append(strconv.AppendInt(append(b.evt[:0], b.s.evtPrefix...), int64(b.worker), 10), '_'), b.n, 10)
		b.hook = b.webhookBody(b.hook[:0], b.evt)
	}
	w.Prepare("POST", "/v1/webhooks/card")
	w.Req.Header.SetContentType("application/json")
	b.sig = b.signature(b.sig[:0], time.Now().Unix(), b.hook)
	w.Req.Header.SetBytesV("Payment-Signature", b.sig)
	w.Req.SetBodyRaw(b.hook)
	return w.Send()
}

// confirmed reads the registration as the buyer's success page does: ok
// when it is confirmed and paid.
func (b *buyer) confirmed(w *load.Worker) (ok bool, status int, transport string) {
	b.prepare(w, "GET", "")
	uri := append(append(w.Buf[:0], "/v1/storefront/registration/"...), b.reg...)
	w.Buf = uri
	w.Req.SetRequestURIBytes(uri)
	if status, transport = w.Send(); transport != "" || status != 200 {
		return false, status, transport
	}
	body := w.Resp.Body()
	return bytes.Equal(load.Field(body, `"status":`), []byte("confirmed")) &&
		bytes.Equal(load.Field(body, `"paymentStatus":`), []byte("paid")), status, ""
}

// redelivered reports whether the buyer's webhook is delivered twice: one
// buyer in redeliverEvery.
func (b *buyer) redelivered() bool { return b.seq%redeliverEvery == 0 }

// Success-page polls: a confirmed webhook answer should show at once; a
// few short retries cover a confirmation applied just after it.
const (
	readTries = 5
	readPause = 20 * time.Millisecond
)

// regResult is how one storefront buyer's purchase ended.
type regResult int

const (
	regConfirmed regResult = iota // the buyer's page showed it confirmed
	regUnsure                     // paid or not: the check asks again
	regFailed                     // an error before payment
)

// payOps are the ops of a registered buyer's payment, in the order of
// the steps, and of the whole buyer.
type payOps struct{ checkout, webhook, redeliver, read, buyer int }

func (p *payOps) register(ops *opSet) {
	p.checkout, p.webhook, p.redeliver = ops.add("checkout_session"), ops.add("webhook"), ops.add("webhook_redelivered")
	p.read, p.buyer = ops.add("registration_read"), ops.add("buyer")
}

// checkoutAndPay is the rest of a registered buyer's purchase: the card
// checkout session for the cart (subtotal is selectedTicketAmount), the
// processor's webhook (twice for one buyer in redeliverEvery) and the
// success page's read. It records how the registration of tickets
// admissions (seats, when seated) ended; a confirmed buyer counts one
// unit, its latency from intended.
func (b *buyer) checkoutAndPay(w *load.Worker, t *regTally, ops payOps, eventID string, cart []byte, subtotal money.Cents,
	tickets int64, seats []string, intended time.Time) {
	start := time.Now()
	st, tr, ok := b.checkout(w, eventID, cart, subtotal)
	w.Observe(ops.checkout, start)
	if !ok {
		w.Error("checkout session " + answerCode(w, st, tr))
		t.end(b, regFailed, tickets, seats)
		return
	}
	again := b.redelivered()
	if again {
		t.redelivered++
	}
	res := b.payAndSee(w, ops, again)
	t.end(b, res, tickets, seats)
	if res == regConfirmed {
		w.Observe(ops.buyer, intended)
		w.Done(1)
	}
}

// payAndSee pays the registration (redelivering the webhook when again)
// and reads it until confirmed, timing each step.
func (b *buyer) payAndSee(w *load.Worker, ops payOps, again bool) regResult {
	start := time.Now()
	st, tr := b.pay(w, false)
	w.Observe(ops.webhook, start)
	if tr != "" || st != 200 {
		w.Error("webhook " + answerCode(w, st, tr))
		return regUnsure // it may have been booked: the check asks
	}
	if again {
		start = time.Now()
		st, tr = b.pay(w, true)
		w.Observe(ops.redeliver, start)
		if tr != "" || st >= 500 {
			w.Error("webhook redelivery " + answerCode(w, st, tr))
		} else if st != 200 {
			w.Reject("webhook redelivery " + w.Code())
		}
	}
	for i := range readTries {
		start = time.Now()
		ok, st, tr := b.confirmed(w)
		w.Observe(ops.read, start)
		if ok {
			return regConfirmed
		}
		if tr != "" || st != 200 {
			w.Error("registration " + answerCode(w, st, tr))
			return regUnsure
		}
		if i < readTries-1 {
			time.Sleep(readPause)
		}
	}
	w.Error("registration not confirmed after the webhook")
	return regUnsure
}

// regTally is what one part's buyers saw of their registrations.
type regTally struct {
	confirmed []integrity.Registration
	// seats maps a seat label to the registrations confirmed with it.
	seats   map[string][]string
	soldOut int64 // register-guest answered sold out
	// refused counts registrations that hold inventory unpaid: an error
	// after register-guest, or a webhook that did not confirm them.
	refused     int64
	unsure      []unsureReg
	redelivered int64
	// lastConfirmed is when the last confirmation was seen.
	lastConfirmed time.Time
}

type unsureReg struct {
	reg     integrity.Registration
	ip      string
	seats   []string
	payment bool // the webhook was sent: it may have confirmed it
}

func (t *regTally) confirm(reg integrity.Registration, seats []string, at time.Time) {
	t.confirmed = append(t.confirmed, reg)
	for _, l := range seats {
		if t.seats == nil {
			t.seats = map[string][]string{}
		}
		t.seats[l] = append(t.seats[l], reg.ID)
	}
	if at.After(t.lastConfirmed) {
		t.lastConfirmed = at
	}
}

func (t *regTally) merge(o *regTally) {
	t.confirmed = append(t.confirmed, o.confirmed...)
	for l, ids := range o.seats {
		if t.seats == nil {
			t.seats = map[string][]string{}
		}
		t.seats[l] = append(t.seats[l], ids...)
	}
	t.soldOut += o.soldOut
	t.refused += o.refused
	t.unsure = append(t.unsure, o.unsure...)
	t.redelivered += o.redelivered
	if o.lastConfirmed.After(t.lastConfirmed) {
		t.lastConfirmed = o.lastConfirmed
	}
}

// tickets is the number of tickets confirmed.
func (t *regTally) tickets() (n int64) {
	for _, r := range t.confirmed {
		n += r.Tickets
	}
	return n
}

// record is what the record must hold of the confirmed registrations.
func (t *regTally) record() integrity.Record {
	r := integrity.Record{Orders: int64(len(t.confirmed))}
	for _, c := range t.confirmed {
		r.Tickets += c.Tickets
		r.Revenue += c.Amount
	}
	return r
}

// end records how a buyer's registration ended.
func (t *regTally) end(b *buyer, res regResult, tickets int64, seats []string) {
	reg := integrity.Registration{ID: string(b.reg), Tickets: tickets, Amount: b.amount}
	switch res {
	case regConfirmed:
		t.confirm(reg, seats, time.Now())
	case regUnsure:
		t.unsure = append(t.unsure, unsureReg{reg: reg, ip: string(b.ip), seats: seats, payment: true})
	case regFailed:
		t.unsure = append(t.unsure, unsureReg{reg: reg, ip: string(b.ip), seats: seats})
	}
}

// resolve reads every unsure registration as the buyer's page would:
// confirmed ones join the confirmed, the others hold inventory unpaid. It
// returns how many could not be read.
func (t *regTally) resolve(ctx context.Context, env *Env, s *shop) (unknown int64) {
	for _, u := range t.unsure {
		var d struct {
			Status string `json:"status"`
		}
		err := env.API.Do(ctx, "GET", "/v1/storefront/registration/"+url.PathEscape(u.reg.ID), nil,
			map[string]string{"x-service-key": s.key, "Origin": s.origin, "X-Forwarded-For": u.ip}, nil, &d)
		switch {
		case err != nil:
			unknown++
		case d.Status == "confirmed":
			t.confirm(u.reg, u.seats, time.Time{})
		default:
			t.refused++
		}
	}
	t.unsure = nil
	return unknown
}

// checkRegistrations checks the confirmed registrations against the
// record: in Postgres with their tickets, one buyer e-mail each.
func checkRegistrations(ctx context.Context, env *Env, label, eventID string, t *regTally) (integrity.Checks, []Figure) {
	rec, figs := checkRecord(ctx, env, label, eventID, t.record())
	r := integrity.Registrations{Label: label, Confirmed: t.confirmed, RecordWhy: env.RecordWhy}
	out := integrity.Checks{rec}
	if sr, ok := env.Record.(storefrontRecord); ok {
		stored, err := sr.StorefrontOrders(ctx, eventID)
		if err != nil {
			out = append(out, integrity.Check{Name: label + ": read the record's storefront orders", Status: integrity.Fail, Detail: err.Error()})
			r.RecordWhy = "cannot read the record"
		}
		r.Record = stored
	} else if env.Record != nil {
		r.RecordWhy = "this record has no storefront orders"
	}
	return append(out, integrity.CheckRegistrations(r)...), figs
}

// storefrontRecord is a record that can tell storefront orders and who
// holds each seat ticket (ticketd's Postgres).
type storefrontRecord interface {
	StorefrontOrders(ctx context.Context, eventID string) (map[string]integrity.StoredRegistration, error)
	SeatOwners(ctx context.Context, eventID string) (map[string][]string, error)
}

// redisHash reads a hash of the target's Redis named by name in its key
// space; why says why it was not read (no Redis, prefix not found).
func redisHash(ctx context.Context, env *Env, name func(keys.Space) string) (m map[string]string, why string, err error) {
	sp, why, err := spaceOf(ctx, env, name)
	if why != "" || err != nil {
		return nil, why, err
	}
	m, err = env.Redis.Do(ctx, env.Redis.B().Hgetall().Key(name(sp)).Build()).AsStrMap()
	return m, "", err
}

// spaceOf is the key space of the ticketd the bench runs against: its
// prefix when the bench knows it, else the one a SCAN finds in front of the
// key name gives (exactly one key must end so); why says why there is
// none.
func spaceOf(ctx context.Context, env *Env, name func(keys.Space) string) (sp keys.Space, why string, err error) {
	if env.Redis == nil {
		return sp, "no Redis to read (give -redis-url with -target)", nil
	}
	sp.Prefix = env.KeyPrefix
	if env.PrefixKnown {
		return sp, "", nil
	}
	bare := name(keys.Space{})
	ks, err := redismem.Scan(ctx, env.Redis, "*"+redismem.Glob(bare))
	if err != nil {
		return sp, "", err
	}
	if len(ks) != 1 {
		return sp, fmt.Sprintf("%d keys end in %s: give -key-prefix", len(ks), bare), nil
	}
	sp.Prefix = strings.TrimSuffix(ks[0], bare)
	return sp, "", nil
}

// storefrontOnly wraps a storefront scenario: it runs only when the bench
// can sign the card webhook, the processor's part it plays.
type storefrontOnly struct{ *single }

func (s storefrontOnly) Run(ctx context.Context, env *Env, o Options) (*Outcome, error) {
	if env.CardWebhookSecret == "" {
		why := "the card webhook secret of the target is unknown (give -card-webhook-secret with -target): the bench cannot pay"
		return &Outcome{Checks: integrity.Checks{{Name: s.name + ": run", Status: integrity.NotChecked, Detail: why}},
			Notes: []string{"not run: " + why}}, nil
	}
	return s.single.Run(ctx, env, o)
}
