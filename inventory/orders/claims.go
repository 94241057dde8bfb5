package orders

import (
	"sort"
	"strconv"
	"strings"

	"github.com/ticketd/ticketd/inventory/capacity"
	"github.com/ticketd/ticketd/inventory/money"
)

// ClaimsOf returns the capacity counters a sale of lines takes (field ->
// quantity), as confirm claims them and a rebuild from Postgres counts them
// again: "t:<ticket>", "a:<area>", "tb:<table>" (a table is sold whole: 1),
// "x:<extra>", and every admission (a ticket, a seat, an area place, a
// table's seat) once for "ev", once for the seller's share (seller:
// capacity.SellerField) and, with a showing, once for "sh:<showing>".
// This is the one definition of what an order counts against; pricing uses
// it for the claims of a quote.
func ClaimsOf(lines []Line, showingID, seller string) map[string]int64 {
	claims := make(map[string]int64, 3+len(lines))
	for _, l := range lines {
		AddClaims(claims, l, showingID, seller)
	}
	return claims
}

// AddClaims adds one line's claims to claims.
func AddClaims(claims map[string]int64, l Line, showingID, seller string) {
	admissions := l.Quantity
	switch l.Kind {
	case LineTicket:
		claims[capacity.TicketField(l.RefID)] += l.Quantity
	case LineArea:
		claims[capacity.AreaField(l.RefID)] += l.Quantity
	case LineTable:
		claims[capacity.TableField(l.RefID)]++
	case LineSeat:
	case LineExtra:
		claims[capacity.ExtraField(l.RefID)] += l.Quantity
		return // an extra admits nobody
	default:
		return
	}
	claims["ev"] += admissions
	if seller != "" {
		claims[seller] += admissions
	}
	if showingID != "" {
		claims[capacity.ShowingField(showingID)] += admissions
	}
}

// ClaimArgs appends the claims and seats of a cart to a selling script's
// arguments as order_reserve.lua and reg_register.lua read them (the
// number of claims, field and quantity pairs by field, the number of seats,
// the labels), and returns the order hash's "claims" field ("field qty ..."),
// which confirm, pay and expire read back.
func ClaimArgs(args []string, claims map[string]int64, seatLabels []string) ([]string, string) {
	fields := make([]string, 0, len(claims))
	for f := range claims {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	var field strings.Builder
	args = append(args, strconv.Itoa(len(fields)))
	for _, f := range fields {
		q := strconv.FormatInt(claims[f], 10)
		args = append(args, f, q)
		field.WriteString(f + " " + q + " ")
	}
	args = append(args, strconv.Itoa(len(seatLabels)))
	return append(args, seatLabels...), field.String()
}

// SaleFieldArgs appends the values of a new sale hash's total, ch, by,
// claims, tix and rec fields, in that order, to the arguments of
// order_reserve.lua or reg_register.lua (lib/cart.lua cart_sale_fields
// names them and adds seats and dc from the cart). claims is ClaimArgs'.
func SaleFieldArgs(args []string, total money.Cents, ch, by, claims string, tix, rec []byte) []string {
	return append(args, strconv.FormatInt(int64(total), 10), ch, by, claims, string(tix), string(rec))
}

// ClaimsShowing is the showing whose capacity an order hash's "claims"
// field (ClaimArgs' "field qty ...") claims: "" for an event without
// showings.
func ClaimsShowing(field string) string {
	fs := strings.Fields(field)
	for i := 0; i < len(fs); i += 2 {
		if k, id := capacity.Split(fs[i]); k == capacity.KindShowing {
			return id
		}
	}
	return ""
}

// SellerOf is the share (capacity.SellerField) a sale of source (a
// Record's Source) by channelID claims: the storefront's, or the channel's.
func SellerOf(source, channelID string) string {
	if source == SourceStorefront {
		return capacity.Storefront
	}
	return capacity.ChannelField(channelID)
}
