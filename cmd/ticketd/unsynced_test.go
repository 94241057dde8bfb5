package main

// TICKETD_MAX_UNSYNCED (issue 18, item 4): while Postgres is away the paid
// orders waiting on the Redis streams are their only copy, so sales stop
// once too many wait or the oldest has waited too long, and resume by
// themselves once the sync worker has caught up.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/bench/faultreport"
	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/payments"
	"github.com/ticketd/ticketd/sync/unsynced"
)

// TICKETD_MAX_UNSYNCED defaults to 60s,100000 and is read by
// unsynced.Parse (its tests hold every form); a value it refuses refuses
// the start naming the variable and what is wrong.
func TestLoadConfigMaxUnsynced(t *testing.T) {
	want := map[string]unsynced.Limit{"": {Age: time.Minute, Entries: 100000}, "5s,200": {Age: 5 * time.Second, Entries: 200}, "off": {}}
	for value, limit := range want {
		t.Setenv("TICKETD_MAX_UNSYNCED", value)
		if cfg, err := loadConfig(); err != nil || cfg.MaxUnsynced != limit {
			t.Errorf("TICKETD_MAX_UNSYNCED=%q: %+v (%v), want %+v", value, cfg.MaxUnsynced, err, limit)
		}
	}
	refused := map[string]string{
		"1m,2m":    `TICKETD_MAX_UNSYNCED="1m,2m": two durations`,
		"a minute": `TICKETD_MAX_UNSYNCED="a minute": "a minute" is neither a duration`,
		"100ms":    `TICKETD_MAX_UNSYNCED="100ms": the duration 100ms must be at least 1s`,
	}
	for value, says := range refused {
		t.Setenv("TICKETD_MAX_UNSYNCED", value)
		if _, err := loadConfig(); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("TICKETD_MAX_UNSYNCED=%q: %v, want a refusal saying %q", value, err, says)
		}
	}
}

// unsyncedLimit is the fault test's TICKETD_MAX_UNSYNCED: small, so that
// one partner and two storefront buyers reach it within seconds.
const unsyncedLimit = "5s,200"

// TestFaultPostgresAwayStopsSalesAtTheLimit: Postgres refuses connections
// under partner and storefront load on a ticketd with
// TICKETD_MAX_UNSYNCED=5s,200. Sales go on until the backlog passes the
// limit; then /readyz is 503 NOT_READY with the limit's reason,
// ticketd_sales_stopped{reason="unsynced"} is 1, and every call that
// sells answers 503 with it (reserve, register-guest and the card
// webhook SERVICE_UNAVAILABLE reason "unsynced", so the processor
// retries; confirm ACCRUAL_FAILED_RETRY), also every call of the load
// sent after /readyz said so (the backlog cannot shrink while Postgres is
// away, so the gate cannot reopen). Once Postgres is back, the worker
// drains and sales resume by themselves: the confirm and the webhook
// refused meanwhile go through on their retries. Every acknowledged sale
// is in Postgres once (lost 0), no event sold past its capacity
// (oversold 0). How long sales were stopped is logged, not asserted.
func TestFaultPostgresAwayStopsSalesAtTheLimit(t *testing.T) {
	t.Setenv("TICKETD_MAX_UNSYNCED", unsyncedLimit)
	st, l, _ := startFaultLoad(t, 0, 2, 2, time.Second)
	// A partner order reserved, and a storefront registration whose card
	// checkout is open, before the fault: their confirm and webhook come
	// while sales are stopped.
	pending := st.api.MustReserve(t, "a", "ev_p", map[string]any{"selectedTicketId": "tk", "quantity": 1})
	reg, hook := openCardCheckout(t, l, "10.250.0.1")
	deliver := func() *servertest.Response {
		return st.api.Do(t, "POST", "/v1/webhooks/card", map[string]string{payments.SignatureHeader: payments.Sign(faultCardSecret, time.Now(), hook)}, hook)
	}

	st.pgProxy.Refuse()
	cut := time.Now()
	l.Phase("postgres down")
	stop := waitReadyz(t, st, 60*time.Second, "sales stopped at TICKETD_MAX_UNSYNCED", func(r *servertest.Response) bool {
		return r.Status == 503 && strings.Contains(r.Message, "TICKETD_MAX_UNSYNCED")
	})
	stoppedAt := time.Now()
	// Every call of the load from here on meets the closed gate.
	l.Phase("stopped")
	if stop.Code != "NOT_READY" || !strings.HasPrefix(stop.Message, "sales are stopped: ") || !strings.Contains(string(stop.Data), `"redis":"current"`) ||
		!strings.Contains(string(stop.Data), `"postgres":"unreachable"`) {
		t.Errorf("readyz once stopped: %s", stop)
	}
	var ready struct {
		SyncBacklog struct {
			Entries       int64   `json:"entries"`
			OldestSeconds float64 `json:"oldestSeconds"`
		} `json:"syncBacklog"`
	}
	stop.Decode(t, &ready)
	if ready.SyncBacklog.Entries == 0 {
		t.Errorf("readyz says sales stopped with no backlog: %s", stop)
	}
	if n := l.total("postgres down", "confirm 200") + l.total("postgres down", "webhook 200"); n == 0 {
		t.Errorf("no sale between the cut and the limit: %s", l.Answers("postgres down"))
	}
	if code, body := call(t, "GET", st.api.URL+"/metrics", nil, ""); code != 200 || !strings.Contains(body, `ticketd_sales_stopped{reason="unsynced"} 1`) {
		t.Errorf("metrics while stopped: %d, want ticketd_sales_stopped{reason=\"unsynced\"} 1", code)
	}
	stoppedAnswer(t, "reserve", func() *servertest.Response {
		return st.api.Reserve(t, "a", "ev_p", map[string]any{"selectedTicketId": "tk", "quantity": 1})
	})
	stoppedAnswer(t, "register-guest", l.front("POST", "/register-guest", "10.250.0.2", map[string]any{"eventId": "ev_s",
		"name": "Grace Hopper", "email": "stopped@example.com", "selectedTicketId": "tk", "quantity": 1}))
	stoppedAnswer(t, "card webhook", deliver)
	if c := st.api.Confirm(t, "a", pending.OrderID, pending.Amount, "psp-"+pending.OrderID); c.Status != 503 || c.Code != "ACCRUAL_FAILED_RETRY" {
		t.Errorf("confirm while stopped: %s, want 503 ACCRUAL_FAILED_RETRY", c)
	}
	l.hold("stopped", 2*time.Second)

	l.Phase("healing")
	st.pgProxy.Restore(t)
	healed := time.Now()
	waitReadyz(t, st, 60*time.Second, "sales resumed", func(r *servertest.Response) bool { return r.Status == 200 })
	resumedAt := time.Now()
	l.Phase("resumed")
	// The retries of what was refused go through, and a new purchase.
	if c := retry503(t, func() *servertest.Response {
		return st.api.Confirm(t, "a", pending.OrderID, pending.Amount, "psp-"+pending.OrderID)
	}); c.Status != 200 {
		t.Errorf("the confirm refused while stopped, retried after: %s", c)
	} else {
		l.ack("ev_p", pending.OrderID)
	}
	if r := retry503(t, deliver); r.Status != 200 {
		t.Errorf("the webhook refused while stopped, redelivered after: %s", r)
	} else if got := readRegistration(t, l, reg.RegistrationID); got.Status != "confirmed" {
		t.Errorf("registration after its redelivered webhook: %+v", got)
	} else {
		l.ack("ev_s", reg.RegistrationID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if o, ok, code := (&faultStack{api: st.api}).buy(t, ctx, "ev_p"); !ok {
		t.Errorf("a purchase after sales resumed: %s", code)
	} else {
		l.ack("ev_p", o)
	}
	l.hold("resumed", time.Second)
	l.Stop(20 * time.Second)
	st.drained(t)

	l.Violations()
	for _, p := range l.Phases() {
		l.OnlyAnswers(p, anyAnswer...)
	}
	l.OnlyAnswers("stopped", retryAnswers...)
	counts := l.CheckRecord(30 * time.Second)
	acked, lost, oversold := l.lostAndOversold()
	if lost != 0 || oversold != 0 {
		t.Errorf("%d acknowledged sales: %d lost, %d oversold", acked, lost, oversold)
	}
	faultreport.Print(t, faultreport.Report{
		Injected: fmt.Sprintf("Postgres link down (toxiproxy disabled) under load with TICKETD_MAX_UNSYNCED=%s until sales stopped and 2 s after, then healed", unsyncedLimit),
		Load: fmt.Sprintf("2 partner buyers (one on ev_small, 40 places, sold out) + 2 storefront buyers; sales stopped %s after the cut (%s); stopped for %s (healed %s after the stop, resumed %s after healing); "+
			"postgres down, before the limit: %s | stopped: %s | healing: %s | resumed: %s",
			stoppedAt.Sub(cut).Round(time.Millisecond), stop.Message, resumedAt.Sub(stoppedAt).Round(time.Millisecond),
			healed.Sub(stoppedAt).Round(time.Millisecond), resumedAt.Sub(healed).Round(time.Millisecond),
			l.Answers("postgres down"), l.Answers("stopped"), l.Answers("healing"), l.Answers("resumed")),
		Counts: fmt.Sprintf("acknowledged %d, lost %d, oversold %d; %s", acked, lost, oversold, counts),
	})
}

// openCardCheckout registers a storefront buyer at ip for one ev_s ticket
// and opens its card checkout; it returns the registration and the
// processor's checkout.session.completed webhook for it.
func openCardCheckout(t *testing.T, l *faultLoad, ip string) (servertest.Registered, []byte) {
	t.Helper()
	r := l.front("POST", "/register-guest", ip, map[string]any{"eventId": "ev_s", "name": "Grace Hopper",
		"email": "before-the-cut@example.com", "selectedTicketId": "tk", "quantity": 1})()
	if r.Status != 200 {
		t.Fatalf("register-guest: %s", r)
	}
	var reg servertest.Registered
	r.Decode(t, &reg)
	r = l.front("POST", "/card/create-checkout-session", ip, map[string]any{"eventId": "ev_s", "registrationId": reg.RegistrationID,
		"selectedTicketId": "tk", "quantity": 1, "selectedTicketAmount": reg.Total,
		"successUrl": faultShopOrigin + "/thanks", "cancelUrl": faultShopOrigin + "/cancelled"})()
	if r.Status != 200 {
		t.Fatalf("checkout session: %s", r)
	}
	var d struct {
		URL string `json:"url"`
	}
	r.Decode(t, &d)
	session := d.URL[strings.LastIndexByte(d.URL, '/')+1:]
	return reg, fmt.Appendf(nil, `{"id":"evt_unsynced_1","type":%q,"data":{"object":{"id":%q,"payment_status":"paid","amount_total":%d,"currency":"usd","client_reference_id":%q}}}`,
		payments.EventCheckoutCompleted, session, int64(reg.Total), reg.RegistrationID)
}

// readRegistration reads a registration as the success page does.
func readRegistration(t *testing.T, l *faultLoad, id string) servertest.Registered {
	t.Helper()
	r := retry503(t, l.front("GET", "/registration/"+id, "10.250.0.1", nil))
	var got servertest.Registered
	r.Decode(t, &got)
	return got
}

// waitReadyz polls /readyz until cond holds, for at most d, and returns
// the answer that held.
func waitReadyz(t *testing.T, st *proxiedStack, d time.Duration, what string, cond func(*servertest.Response) bool) *servertest.Response {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		r := st.api.Do(t, "GET", "/readyz", nil, nil)
		if cond(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; readyz says %s", what, d, r)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// stoppedAnswer sends a call that sells while the limit has stopped sales:
// it must answer 503 SERVICE_UNAVAILABLE, reason "unsynced", with the
// limit in its message. A 503 of the Redis state monitor (a check that
// overran its second on a loaded machine) is sent again, for up to 10 s.
func stoppedAnswer(t *testing.T, what string, send func() *servertest.Response) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r := send()
		if r.Status != 503 || r.Code != "SERVICE_UNAVAILABLE" {
			t.Errorf("%s while sales are stopped: %s, want 503 SERVICE_UNAVAILABLE", what, r)
			return
		}
		if r.Reason == unsynced.Reason && strings.Contains(r.Message, "over TICKETD_MAX_UNSYNCED="+unsyncedLimit) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s while sales are stopped: %s, want the TICKETD_MAX_UNSYNCED reason", what, r)
			return
		}
	}
}

// retry503 sends again what is answered 503, for up to 30 s, and returns
// the first other answer (or the last 503).
func retry503(t *testing.T, send func() *servertest.Response) *servertest.Response {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := send()
		if r.Status != 503 || time.Now().After(deadline) {
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ack counts a sale the test itself made (not the load's buyers) as
// acknowledged, for CheckRecord: a partner order paid on ev_p or ev_small,
// or a storefront registration confirmed on ev_s.
func (l *faultLoad) ack(event, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if event == "ev_s" {
		l.regs[id] = true
		return
	}
	l.paid[event][id] = true
}

// lostAndOversold counts the acknowledged sales, those of them Postgres
// does not hold (lost), and the tickets Postgres holds past each event's
// capacity (oversold).
func (l *faultLoad) lostAndOversold() (acked, lost, oversold int) {
	l.mu.Lock()
	ids := keysOf(l.regs)
	for _, paid := range l.paid {
		ids = append(ids, keysOf(paid)...)
	}
	l.mu.Unlock()
	held := l.st.count(l.t, `SELECT count(*) FROM orders WHERE id = ANY($1)`, ids)
	for event, capacity := range faultCaps {
		oversold += max(0, l.st.count(l.t, `SELECT count(*) FROM tickets WHERE event_id = $1`, event)-capacity)
	}
	return len(ids), len(ids) - held, oversold
}
