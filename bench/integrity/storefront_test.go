package integrity

import (
	"strings"
	"testing"
)

func failedNames(cs Checks) string {
	var out []string
	for _, c := range cs {
		if c.Status == Fail {
			out = append(out, c.Name+": "+c.Detail)
		}
	}
	return strings.Join(out, "\n")
}

func TestCheckRegistrations(t *testing.T) {
	confirmed := []Registration{{ID: "o1.ev", Tickets: 1, Amount: 2650}, {ID: "o2.ev", Tickets: 2, Amount: 8400}}
	stored := func() map[string]StoredRegistration {
		return map[string]StoredRegistration{"o1.ev": {Total: 2650, Tickets: 1, BuyerMails: 1}, "o2.ev": {Total: 8400, Tickets: 2, BuyerMails: 1}}
	}
	if cs := CheckRegistrations(Registrations{Label: "x", Confirmed: confirmed, Record: stored()}); !cs.OK() || len(cs) != 3 {
		t.Fatalf("an exact record failed: %s", failedNames(cs))
	}
	for name, c := range map[string]struct {
		edit func(r *Registrations)
		want string
	}{
		"confirmed twice":        {func(r *Registrations) { r.Confirmed = append(r.Confirmed, r.Confirmed[0]) }, "no registration confirmed twice"},
		"missing from Postgres":  {func(r *Registrations) { delete(r.Record, "o2.ev") }, "every confirmed registration is in the record"},
		"a ticket short":         {func(r *Registrations) { r.Record["o2.ev"] = StoredRegistration{Total: 8400, Tickets: 1, BuyerMails: 1} }, "with its tickets"},
		"a wrong total":          {func(r *Registrations) { r.Record["o1.ev"] = StoredRegistration{Total: 2500, Tickets: 1, BuyerMails: 1} }, "with its tickets"},
		"an order nobody saw":    {func(r *Registrations) { r.Record["o3.ev"] = StoredRegistration{Total: 2650, Tickets: 1, BuyerMails: 1} }, "and nothing else"},
		"no buyer e-mail queued": {func(r *Registrations) { r.Record["o1.ev"] = StoredRegistration{Total: 2650, Tickets: 1} }, "exactly one buyer e-mail"},
		"two buyer e-mails":      {func(r *Registrations) { r.Record["o1.ev"] = StoredRegistration{Total: 2650, Tickets: 1, BuyerMails: 2} }, "exactly one buyer e-mail"},
	} {
		r := Registrations{Label: "x", Confirmed: append([]Registration(nil), confirmed...), Record: stored()}
		c.edit(&r)
		if failed := failedNames(CheckRegistrations(r)); !strings.Contains(failed, c.want) {
			t.Errorf("%s: %q did not fail; failed: %s", name, c.want, failed)
		}
	}
	cs := CheckRegistrations(Registrations{Label: "x", Confirmed: confirmed, RecordWhy: "no -database-url"})
	if !cs.OK() || cs[1].Status != NotChecked || cs[2].Status != NotChecked {
		t.Fatalf("a record not read must be 'not checked': %+v", cs)
	}
}

func TestCheckSeatOwners(t *testing.T) {
	good := func() SeatOwners {
		return SeatOwners{Label: "x",
			Confirmed: map[string][]string{"R1-1": {"o1.ev"}, "R1-2": {"o1.ev"}, "R2-5": {"o2.ev"}},
			Booked:    map[string]string{"R1-1": "o1.ev", "R1-2": "o1.ev", "R2-5": "o2.ev"},
			Record:    map[string][]string{"R1-1": {"o1.ev"}, "R1-2": {"o1.ev"}, "R2-5": {"o2.ev"}}}
	}
	if cs := CheckSeatOwners(good()); !cs.OK() || len(cs) != 2 {
		t.Fatalf("an exact booking failed: %s", failedNames(cs))
	}
	for name, edit := range map[string]func(s *SeatOwners){
		"a seat confirmed to two registrations": func(s *SeatOwners) { s.Confirmed["R2-5"] = []string{"o2.ev", "o3.ev"} },
		"booked to another registration":        func(s *SeatOwners) { s.Booked["R2-5"] = "o9.ev" },
		"booked, confirmed to nobody":           func(s *SeatOwners) { s.Booked["R3-1"] = "o4.ev"; s.Record["R3-1"] = []string{"o4.ev"} },
		"confirmed, not booked":                 func(s *SeatOwners) { delete(s.Booked, "R1-2"); delete(s.Record, "R1-2") },
		"a seat with two tickets":               func(s *SeatOwners) { s.Record["R1-1"] = []string{"o1.ev", "o2.ev"} },
		"a ticket in another order":             func(s *SeatOwners) { s.Record["R1-1"] = []string{"o2.ev"} },
		"a booked seat without a ticket":        func(s *SeatOwners) { delete(s.Record, "R2-5") },
	} {
		s := good()
		edit(&s)
		if cs := CheckSeatOwners(s); cs.OK() {
			t.Errorf("%s: passed", name)
		}
	}
	s := good()
	s.Booked, s.BookedWhy = nil, "no Redis"
	if cs := CheckSeatOwners(s); !cs.OK() || cs[0].Status != NotChecked || cs[1].Status != NotChecked {
		t.Fatalf("without Redis' booked hash both checks are 'not checked': %+v", cs)
	}
}

func TestCheckSaleWithoutSoldCountsChecksTheBuyersOnly(t *testing.T) {
	cs := CheckSale(Sale{Label: "x", Caps: caps(10), PerOrder: 1, Paid: 10, SoldOutReserves: 5, SoldWhy: "no Redis"})
	if !cs.OK() || len(cs) != 4 || cs[0].Status != Pass || cs[1].Status != NotChecked {
		t.Fatalf("%+v", cs)
	}
	if CheckSale(Sale{Label: "x", Caps: caps(10), PerOrder: 1, Paid: 9, Refused: 1, SoldWhy: "no Redis"}).OK() {
		t.Fatal("a refused registration below capacity passed")
	}
}
