package seats

import (
	"strconv"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
)

// The single-seat rule (decisions.md §7, docs/decisions.md "Seat rules and
// best-available") is enforced by the hold script; Go only chooses which
// neighbour seats the script must see, words its refusal, and, for
// best-available, skips blocks the script would refuse (strands below).

// neighbours returns, for the single-seat rule, the seats of the same rows
// within two of each label that are not labels themselves: the seats the
// hold script reads to decide whether a free seat next to a new one is
// left alone. Labels must be seats of ev's map. With the rule off, none.
func neighbours(ev *catalog.CompiledEvent, labels []string) []string {
	if ev.SeatMap.Rule() == catalog.SeatRuleOff {
		return nil
	}
	skip := make(map[string]bool, len(labels)*5)
	for _, l := range labels {
		skip[l] = true
	}
	var out []string
	for _, l := range labels {
		row, n := splitLabel(l)
		r := ev.Rows[row]
		if r == nil {
			continue
		}
		for k := max(1, n-2); k <= min(r.Seats, n+2); k++ {
			nl := row + "-" + strconv.Itoa(k)
			if !skip[nl] {
				skip[nl] = true
				out = append(out, nl)
			}
		}
	}
	return out
}

// strands reports the free seats of a row of size seats that holding the
// seats numbered held (all free before) would leave alone under rule, by
// number; taken(k) tells whether seat k is taken now. It is the hold
// script's check, for best-available to skip blocks the script would refuse.
func strands(rule string, seats int, taken func(k int) bool, held []int) []int {
	if rule == catalog.SeatRuleOff {
		return nil
	}
	isNew := make(map[int]bool, len(held))
	for _, k := range held {
		isNew[k] = true
	}
	// state: 0 free, 1 taken, 2 beyond the row's end.
	state := func(k int) int {
		switch {
		case k < 1 || k > seats:
			return 2
		case isNew[k] || taken(k):
			return 1
		}
		return 0
	}
	var out []int
	seen := map[int]bool{}
	for _, k := range held {
		for _, s := range []int{k - 1, k + 1} {
			if seen[s] || state(s) != 0 {
				continue
			}
			l, r := state(s-1), state(s+1)
			if l == 1 && r == 1 || rule == catalog.SeatRuleStrict && l != 0 && r != 0 {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// RuleError is the 409 SEAT_RULE naming the first of the stranded seats
// (by row and number) in data.seatLabel.
func RuleError(ev *catalog.CompiledEvent, stranded []string) *apierr.Error {
	sortLabels(stranded)
	l := stranded[0]
	where := "alone between taken seats"
	if row, n := splitLabel(l); ev.Rows[row] != nil && (n == 1 || n == ev.Rows[row].Seats) {
		where = "alone at the end of its row"
	}
	return apierr.Of("SEAT_RULE", "this choice would leave seat %s %s; add %s or pick other seats", l, where, l).
		WithData(map[string]any{"seatLabel": l})
}
