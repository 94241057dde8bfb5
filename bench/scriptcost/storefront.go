package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/capacity"
	"github.com/ticketd/ticketd/inventory/holds"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/pricing"
	"github.com/ticketd/ticketd/inventory/registrations"
)

// storefrontResult is Redis CPU (us) per call of each step of a storefront
// sale, as the bench's storefront-flash buyer takes them.
type storefrontResult struct {
	Registrations                 int
	RegisterUS, CheckoutUS, PayUS float64
	ReadUS                        float64
}

func (r storefrontResult) print() {
	fmt.Printf("Redis CPU per call, %d storefront registrations of one GA ticket:\n", r.Registrations)
	fmt.Printf("  register (reg_register)                                      %6.2f us\n", r.RegisterUS)
	fmt.Printf("  checkout session (reg_checkout)                              %6.2f us\n", r.CheckoutUS)
	fmt.Printf("  payment with its webhook mark (reg_pay)                      %6.2f us\n", r.PayUS)
	fmt.Printf("  registration read (reg_status)                               %6.2f us\n", r.ReadUS)
	fmt.Printf("  the sale                                                     %6.2f us\n", r.RegisterUS+r.CheckoutUS+r.PayUS+r.ReadUS)
}

// The storefront sale's event, which measure puts on sale with the
// partner pair's before the first phase, and the claims of its one GA
// ticket.
const storefrontEvent = "ev_scriptcost_sf"

var storefrontClaims = map[string]int64{capacity.Event: 1, capacity.TicketField("tk_ga"): 1, capacity.Storefront: 1}

// measureStorefront sells n registrations of one GA ticket through
// registrations.Service, c at a time, step by step as a storefront-flash
// buyer does (register-guest, the card checkout session, the processor's
// webhook, the success page's read), and divides the Redis server's CPU
// over each step by n. The checkout session is attached as the built-in
// card processor's is (the same script as OpenCheckout's, with no older
// session to close). Every registration must end paid.
func measureStorefront(ctx context.Context, rc rueidis.Client, space keys.Space, pid, n, c int) (storefrontResult, error) {
	o := &orders.Service{Redis: rc, Space: space, OrderTTL: 30 * time.Minute, IDKey: []byte("scriptcost")}
	s := &registrations.Service{Redis: rc, Space: space, Orders: o, CheckoutTTL: 15 * time.Minute, HoldTTL: 3 * time.Minute}
	const ev, tenant = storefrontEvent, "t_scriptcost"
	// The cart a storefront-flash buyer registers: one GA ticket at 25.00
	// plus the fee, counted against the buyer's client address.
	q := pricing.Quote{Subtotal: 2500, Fee: 150, Total: 2650, PaidAdmissions: 1, Claims: storefrontClaims,
		Lines:      []orders.Line{{Kind: orders.LineTicket, RefID: "tk_ga", Quantity: 1, UnitPrice: 2500, Amount: 2500}},
		Admissions: []pricing.Admission{{Kind: orders.LineTicket, RefID: "tk_ga", Label: "General"}}}
	ids := make([]string, n)
	session := func(i int) string { return "cs_scriptcost_" + strconv.Itoa(i) }
	register := func(i int) error {
		reg, err := s.Register(ctx, registrations.Request{EventID: ev, TenantID: tenant, Quote: q,
			Buyer:  registrations.Buyer{Name: "Bench Buyer", Email: "buyer" + strconv.Itoa(i) + "@bench.example.com"},
			Client: holds.Client{Key: "client" + strconv.Itoa(i%128), Limit: int64(n)}})
		ids[i] = reg.ID
		return err
	}
	attach := func(i int) error { return s.AttachSession(ctx, ids[i], "card", session(i)) }
	pay := func(i int) error {
		out, err := s.PayMarked(ctx, registrations.Payment{RegistrationID: ids[i], Processor: "card", PaymentID: session(i),
			Amount: 2650, Currency: "usd"},
			registrations.Mark{Key: space.WebhookSeen("card", "evt_"+strconv.Itoa(i), ids[i]), Value: "done:1", TTL: time.Hour})
		if err == nil && out.Status != registrations.StatusConfirmed {
			err = fmt.Errorf("registration %s is %s after its payment", ids[i], out.Status)
		}
		return err
	}
	read := func(i int) error {
		_, found, err := s.Get(ctx, ids[i])
		if err == nil && !found {
			err = fmt.Errorf("registration %s not found", ids[i])
		}
		return err
	}
	res := storefrontResult{Registrations: n}
	for _, st := range []struct {
		name string
		f    func(int) error
		us   *float64
	}{{"register", register, &res.RegisterUS}, {"checkout session", attach, &res.CheckoutUS}, {"pay", pay, &res.PayUS}, {"read", read, &res.ReadUS}} {
		us, err := phase(st.name, pid, n, c, st.f)
		if err != nil {
			return storefrontResult{}, fmt.Errorf("%s: %w", st.name, err)
		}
		*st.us = us
	}
	paid, err := rc.Do(ctx, rc.B().Hget().Key(space.Sold(ev)).Field("paid").Build()).AsInt64()
	if err != nil || paid != int64(n) {
		return storefrontResult{}, fmt.Errorf("the event's paid units are %d (%v), want %d", paid, err, n)
	}
	return res, nil
}
