// Package checkout holds what every selling surface does with a checkout
// request before the order scripts run: the buyer's fields checked
// (interface.md's INVALID_BUYER_* rules), the success callback checked, the
// request's fingerprint for its Idempotency-Key, and the order record and
// tickets built from a pricing.Quote. The partner surface (handlers/channel)
// and the storefront use it, so both refuse and record the same way.
package checkout

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/pricing"
)

// Currency is the one currency ticketd sells in.
const Currency = "USD"

// MaxCallbackURL is the longest successCallbackUrl accepted.
const MaxCallbackURL = 2048

var errCallback = apierr.Invalid("successCallbackUrl must be an absolute http(s) URL")

// ValidateCallback checks an optional successCallbackUrl: empty, or an
// absolute http(s) URL of at most MaxCallbackURL bytes.
func ValidateCallback(u string) *apierr.Error {
	if u == "" {
		return nil
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" || len(u) > MaxCallbackURL {
		return errCallback
	}
	return nil
}

// Fingerprint identifies a checkout request by what it buys, not by how the
// JSON was written: the same cart with quantity 1 spelt out or left to its
// default, or its lines in another order, is the same request for its
// Idempotency-Key. eventAndShowing is the event id and showing id joined
// by "\x1f"; callback and holdToken are "" when absent.
func Fingerprint(eventAndShowing string, b Buyer, callback, holdToken string, q pricing.Quote) string {
	lines := make([]string, len(q.Lines))
	for i, l := range q.Lines {
		lines[i] = l.Kind + "\x1f" + l.RefID + "\x1f" + strconv.FormatInt(l.Quantity, 10)
	}
	sort.Strings(lines)
	h := sha256.New()
	for _, part := range []string{eventAndShowing, b.Name, b.Email, b.Phone, callback, holdToken, q.DiscountCode,
		strconv.FormatBool(q.RefundProtection != nil), strconv.FormatInt(int64(q.Total), 10), strings.Join(lines, "\x1e")} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Origin says where an order comes from: its source ("channel",
// "storefront"), the selling channel's id (empty for the storefront), the
// showing and the success callback of the request.
type Origin struct {
	Source, ChannelID, ShowingID, SuccessCallbackURL string
}

// NewRecord is the order record of a priced checkout: amounts, lines and
// one ticket per admission (Tickets).
func NewRecord(ev *catalog.CompiledEvent, q pricing.Quote, b Buyer, o Origin) orders.Record {
	r := orders.Record{
		EventID: ev.ID, TenantID: ev.TenantID, ChannelID: o.ChannelID, Source: o.Source,
		BuyerName: b.Name, BuyerEmail: b.Email, BuyerPhone: b.Phone,
		ShowingID: o.ShowingID, SuccessCallbackURL: o.SuccessCallbackURL, DiscountCode: q.DiscountCode, Currency: Currency,
		Subtotal: q.Subtotal, Discount: q.Discount, Extras: q.ExtrasTotal, Fee: q.Fee, VAT: q.VAT,
		Total: q.Total, Lines: q.Lines, Tickets: Tickets(q),
	}
	if q.RefundProtection != nil {
		r.RefundProtection = q.RefundProtection.Amount
	}
	return r
}

// Tickets is one ticket per admission of the quote (ids are given when the
// order is paid).
func Tickets(q pricing.Quote) []orders.Ticket {
	out := make([]orders.Ticket, len(q.Admissions))
	for i, ad := range q.Admissions {
		out[i] = orders.Ticket{Label: ad.Label, Kind: ad.Kind, RefID: ad.RefID}
	}
	return out
}
