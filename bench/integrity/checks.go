// Package integrity decides whether a bench run's numbers add up: what the
// buyers were told (counted by the load generator), what ticketd says it
// sold (Redis, read through its API) and what the record holds (Postgres,
// after the sync worker drained). A run whose numbers do not add up fails,
// whatever its throughput.
package integrity

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ticketd/ticketd/inventory/money"
)

// Status is the outcome of one check.
type Status string

// A check passes, fails, or could not be made (and is then never counted
// as passed).
const (
	Pass       Status = "pass"
	Fail       Status = "FAIL"
	NotChecked Status = "not checked"
)

// Check is one named check with the numbers behind it.
type Check struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
}

// Checks are the checks of one run.
type Checks []Check

// OK reports whether no check failed. Checks not made do not fail a run;
// they are printed as "not checked".
func (cs Checks) OK() bool {
	for _, c := range cs {
		if c.Status == Fail {
			return false
		}
	}
	return true
}

func check(name string, ok bool, format string, args ...any) Check {
	st := Pass
	if !ok {
		st = Fail
	}
	return Check{Name: name, Status: st, Detail: fmt.Sprintf(format, args...)}
}

// Sale is one general-admission sale as the buyers saw it and as ticketd
// reports it.
type Sale struct {
	// Label names the event in check names.
	Label string
	// Caps is the capacity of each counter on sale (ticket type, event).
	Caps map[string]int64
	// PerOrder is the number of tickets in each order.
	PerOrder int64
	// Paid counts confirms answered paid (including confirms without an
	// answer that the status endpoint later reported paid).
	Paid int64
	// SoldOutConfirms counts confirms answered CONFIRM_FAILED (sold out).
	SoldOutConfirms int64
	// Refused counts confirms refused for any other reason: a definite
	// no, so an attempt that should have been paid while tickets remained.
	Refused int64
	// SoldOutReserves counts reserves answered sold out.
	SoldOutReserves int64
	// Unresolved counts confirms with no definite answer, even from status.
	Unresolved int64
	// Sold is what ticketd reports sold per counter (capacity - remaining).
	Sold map[string]int64
	// SoldWhy, with Sold nil, says why the sold counts were not read: the
	// checks that need them are then not made.
	SoldWhy string
}

// CheckSale checks a GA sale: confirmed == min(capacity, attempts) exactly,
// ticketd's sold counts equal the confirmed tickets, nothing oversold, and
// sold-out answers only once a capacity was reached.
func CheckSale(s Sale) Checks {
	per := max(s.PerOrder, 1)
	capOrders := int64(-1) // the smallest capacity, in orders
	for _, c := range s.Caps {
		if capOrders < 0 || c/per < capOrders {
			capOrders = c / per
		}
	}
	attempts := s.Paid + s.SoldOutConfirms + s.Refused
	want := attempts
	if capOrders >= 0 && capOrders < want {
		want = capOrders
	}
	var out Checks
	out = append(out, check(s.Label+": confirmed == min(capacity, attempts)",
		s.Paid == want && s.Unresolved == 0,
		"confirmed %d, capacity %d orders, attempts %d (paid %d + sold out at confirm %d + refused otherwise %d), want %d; unresolved confirms %d",
		s.Paid, capOrders, attempts, s.Paid, s.SoldOutConfirms, s.Refused, want, s.Unresolved))

	agreeName, overName, atCapName := s.Label+": sold counts (as the server reports them) == tickets confirmed to buyers",
		s.Label+": no oversell", s.Label+": sold out only at capacity"
	if s.Sold == nil && s.SoldWhy != "" {
		for _, name := range []string{agreeName, overName, atCapName} {
			out = append(out, Check{Name: name, Status: NotChecked, Detail: s.SoldWhy})
		}
		return out
	}
	fields := sortedKeys(s.Caps)
	var parts []string
	agree, over, atCap := true, false, false
	for _, f := range fields {
		sold, ok := s.Sold[f]
		if !ok {
			agree = false
			parts = append(parts, f+" missing")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s sold %d of %d", f, sold, s.Caps[f]))
		if sold != s.Paid*per {
			agree = false
		}
		if sold > s.Caps[f] {
			over = true
		}
		if sold == s.Caps[f] {
			atCap = true
		}
	}
	out = append(out, check(agreeName, agree,
		"%s; confirmed tickets %d", strings.Join(parts, ", "), s.Paid*per))
	out = append(out, check(overName, !over, "%s", strings.Join(parts, ", ")))
	soldOut := s.SoldOutConfirms + s.SoldOutReserves
	out = append(out, check(atCapName, soldOut == 0 || atCap,
		"sold-out answers %d (reserve %d, confirm %d), capacity reached: %v", soldOut, s.SoldOutReserves, s.SoldOutConfirms, atCap))
	return out
}

// Record is what the durable record holds for one event.
type Record struct {
	Orders  int64
	Tickets int64
	// Revenue is the sum of paid order totals; negative when the record
	// does not report it.
	Revenue money.Cents
}

// CheckRecord compares the record, after the sync worker drained, with
// what was sold. got nil means the record could not be read: not checked,
// with why.
func CheckRecord(label string, want Record, got *Record, why string) Check {
	name := label + ": record holds exactly the paid orders and tickets"
	if got == nil {
		return Check{Name: name, Status: NotChecked, Detail: why}
	}
	ok := got.Orders == want.Orders && got.Tickets == want.Tickets
	rev := ""
	if want.Revenue >= 0 && got.Revenue >= 0 {
		ok = ok && got.Revenue == want.Revenue
		rev = fmt.Sprintf(", revenue %s (want %s)", got.Revenue, want.Revenue)
	}
	return check(name, ok, "orders %d (want %d), tickets %d (want %d)%s%s",
		got.Orders, want.Orders, got.Tickets, want.Tickets, rev, suffix(why))
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return "; " + s
}

// Seats is a reserved-seating sale as the buyers saw it and as ticketd
// and the record report it.
type Seats struct {
	Label string
	// Paid counts, per seat label, the paid orders that hold it.
	Paid map[string]int
	// Booked are the seats ticketd reports booked.
	Booked []string
	// RecordSeats are the seat labels of the record's tickets, one per
	// ticket (a label twice means a seat issued twice); nil when the record
	// was not read, with RecordWhy saying why.
	RecordSeats []string
	RecordWhy   string
}

// CheckSeats checks that no seat was sold twice: not to two buyers, not in
// ticketd's booked map, not in the record's tickets.
func CheckSeats(s Seats) Checks {
	var twice []string
	for l, n := range s.Paid {
		if n > 1 {
			twice = append(twice, l)
		}
	}
	sort.Strings(twice)
	out := Checks{check(s.Label+": no seat confirmed to two buyers", len(twice) == 0,
		"%d seats confirmed, %d of them twice%s", len(s.Paid), len(twice), listed(twice))}

	booked := map[string]bool{}
	for _, l := range s.Booked {
		booked[l] = true
	}
	var missing, extra []string
	for l := range s.Paid {
		if !booked[l] {
			missing = append(missing, l)
		}
	}
	for l := range booked {
		if s.Paid[l] == 0 {
			extra = append(extra, l)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	out = append(out, check(s.Label+": ticketd booked == seats confirmed to buyers",
		len(missing) == 0 && len(extra) == 0 && len(booked) == len(s.Booked),
		"booked %d (%d listed), confirmed %d; confirmed not booked %d%s; booked not confirmed %d%s",
		len(booked), len(s.Booked), len(s.Paid), len(missing), listed(missing), len(extra), listed(extra)))

	name := s.Label + ": no seat label in two tickets of the record"
	if s.RecordSeats == nil {
		out = append(out, Check{Name: name, Status: NotChecked, Detail: s.RecordWhy})
		return out
	}
	seen := map[string]int{}
	var dup []string
	for _, l := range s.RecordSeats {
		seen[l]++
		if seen[l] == 2 {
			dup = append(dup, l)
		}
	}
	sort.Strings(dup)
	out = append(out, check(name, len(dup) == 0 && len(seen) == len(booked),
		"%d seat tickets, %d distinct seats (booked %d), %d labels twice%s",
		len(s.RecordSeats), len(seen), len(booked), len(dup), listed(dup)))
	return out
}

// listed shows the first few labels of a problem list.
func listed(ls []string) string {
	if len(ls) == 0 {
		return ""
	}
	if len(ls) > 5 {
		return " (" + strings.Join(ls[:5], ", ") + ", ...)"
	}
	return " (" + strings.Join(ls, ", ") + ")"
}

func sortedKeys(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
