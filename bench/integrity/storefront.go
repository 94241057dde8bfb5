package integrity

import (
	"fmt"
	"sort"

	"github.com/ticketd/ticketd/inventory/money"
)

// Registration is a storefront registration the buyers saw confirmed.
type Registration struct {
	ID      string
	Tickets int64
	Amount  money.Cents
}

// StoredRegistration is a storefront order as the record holds it.
type StoredRegistration struct {
	Total   money.Cents
	Tickets int64
	// BuyerMails counts its outbox rows of kind buyer_tickets.
	BuyerMails int64
}

// Registrations is a storefront sale as the buyers saw it and as the
// record holds it.
type Registrations struct {
	Label     string
	Confirmed []Registration
	// Record maps order id to the stored registration, every storefront
	// order of the event; nil when not read, RecordWhy saying why.
	Record    map[string]StoredRegistration
	RecordWhy string
}

// CheckRegistrations checks that no registration was confirmed twice, that
// the record holds exactly the confirmed registrations, each with its
// tickets and total, and that exactly one buyer e-mail was queued for each.
func CheckRegistrations(r Registrations) Checks {
	seen := make(map[string]int, len(r.Confirmed))
	var twice []string
	for _, c := range r.Confirmed {
		if seen[c.ID]++; seen[c.ID] == 2 {
			twice = append(twice, c.ID)
		}
	}
	sort.Strings(twice)
	out := Checks{check(r.Label+": no registration confirmed twice", len(twice) == 0,
		"%d confirmations seen by buyers, %d distinct registrations, %d confirmed more than once%s",
		len(r.Confirmed), len(seen), len(twice), listed(twice))}

	inRecord := r.Label + ": every confirmed registration is in the record (source storefront) with its tickets and total, and nothing else"
	mails := r.Label + ": exactly one buyer e-mail queued per registration (outbox buyer_tickets)"
	if r.Record == nil {
		return append(out, Check{Name: inRecord, Status: NotChecked, Detail: r.RecordWhy},
			Check{Name: mails, Status: NotChecked, Detail: r.RecordWhy})
	}
	var missing, wrong, extra, badMail []string
	want := map[string]bool{}
	for _, c := range r.Confirmed {
		want[c.ID] = true
		s, ok := r.Record[c.ID]
		switch {
		case !ok:
			missing = append(missing, c.ID)
		case s.Tickets != c.Tickets || s.Total != c.Amount:
			wrong = append(wrong, fmt.Sprintf("%s: %d tickets, total %s (want %d, %s)", c.ID, s.Tickets, s.Total, c.Tickets, c.Amount))
		}
	}
	var mailRows int64
	for id, s := range r.Record {
		if !want[id] {
			extra = append(extra, id)
		}
		if s.BuyerMails != 1 {
			badMail = append(badMail, fmt.Sprintf("%s: %d", id, s.BuyerMails))
		}
		mailRows += s.BuyerMails
	}
	for _, l := range [][]string{missing, wrong, extra, badMail} {
		sort.Strings(l)
	}
	out = append(out, check(inRecord, len(missing) == 0 && len(wrong) == 0 && len(extra) == 0,
		"%d confirmed, %d storefront orders in the record; missing %d%s; wrong tickets or total %d%s; not seen confirmed %d%s",
		len(want), len(r.Record), len(missing), listed(missing), len(wrong), listed(wrong), len(extra), listed(extra)))
	return append(out, check(mails, len(badMail) == 0,
		"%d buyer e-mails queued for %d storefront orders; orders without exactly one: %d%s",
		mailRows, len(r.Record), len(badMail), listed(badMail)))
}

// SeatOwners is who holds each booked seat: the registrations buyers saw
// confirmed with it, Redis' booked hash and the record's seat tickets.
type SeatOwners struct {
	Label string
	// Confirmed maps a seat label to the registrations confirmed with it.
	Confirmed map[string][]string
	// Booked is the event's booked hash in Redis (label -> order id); nil
	// when not read, BookedWhy saying why.
	Booked    map[string]string
	BookedWhy string
	// Record maps a seat label to the orders of its seat tickets; nil when
	// not read, RecordWhy saying why.
	Record    map[string][]string
	RecordWhy string
}

// CheckSeatOwners checks that every booked seat belongs to exactly one
// confirmed registration, the one that Redis' booked hash and the record's
// ticket name, and that every confirmed seat is booked to its registration.
func CheckSeatOwners(s SeatOwners) Checks {
	redis := s.Label + ": each booked seat (Redis booked hash) belongs to exactly one confirmed registration, and each confirmed seat is booked to it"
	var out Checks
	if s.Booked == nil {
		out = append(out, Check{Name: redis, Status: NotChecked, Detail: s.BookedWhy})
	} else {
		var bad []string
		for l, owner := range s.Booked {
			if regs := s.Confirmed[l]; len(regs) != 1 || regs[0] != owner {
				bad = append(bad, fmt.Sprintf("%s booked to %s, confirmed to %v", l, owner, regs))
			}
		}
		for l, regs := range s.Confirmed {
			if _, ok := s.Booked[l]; !ok {
				bad = append(bad, fmt.Sprintf("%s confirmed to %v, not booked", l, regs))
			}
		}
		sort.Strings(bad)
		out = append(out, check(redis, len(bad) == 0, "%d seats booked, %d confirmed; %d disagree%s",
			len(s.Booked), len(s.Confirmed), len(bad), listed(bad)))
	}

	record := s.Label + ": each seat ticket of the record is the only one of its seat, in the order Redis booked it to"
	if s.Record == nil || s.Booked == nil {
		why := s.RecordWhy
		if s.Record != nil {
			why = s.BookedWhy
		}
		return append(out, Check{Name: record, Status: NotChecked, Detail: why})
	}
	var bad []string
	for l, orders := range s.Record {
		if owner, ok := s.Booked[l]; len(orders) != 1 || !ok || orders[0] != owner {
			bad = append(bad, fmt.Sprintf("%s tickets in %v, booked to %q", l, orders, owner))
		}
	}
	for l, owner := range s.Booked {
		if _, ok := s.Record[l]; !ok {
			bad = append(bad, fmt.Sprintf("%s booked to %s, no ticket", l, owner))
		}
	}
	sort.Strings(bad)
	return append(out, check(record, len(bad) == 0, "%d seats with tickets, %d booked; %d disagree%s",
		len(s.Record), len(s.Booked), len(bad), listed(bad)))
}
