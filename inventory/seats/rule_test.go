package seats

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/redistest"
)

// ruleEvents compiles one event per single-seat rule, each with row A (10
// seats), row P (2 seats), row S (1 seat) and row Z (10 unpriced seats).
func ruleEvents(t *testing.T) map[string]*catalog.CompiledEvent {
	t.Helper()
	var evs []catalog.Event
	for _, rule := range []string{"", catalog.SeatRuleOff, catalog.SeatRuleLenient, catalog.SeatRuleStrict} {
		id := "ev_" + rule
		if rule == "" {
			id = "ev_unset"
		}
		evs = append(evs, catalog.Event{ID: id, Status: catalog.StatusOnSale, SeatMap: &catalog.SeatMap{
			SingleSeatRule: rule,
			Categories:     []catalog.Category{{ID: "std", Name: "Std", Price: cents(1000)}, {ID: "side", Name: "Side", Price: cents(500)}, {ID: "none", Name: "None"}},
			Rows: []catalog.Row{{Label: "Z", Seats: 10, Category: "none"}, {Label: "A", Seats: 10, Category: "std"},
				{Label: "P", Seats: 2, Category: "side"}, {Label: "S", Seats: 1, Category: "side"}},
		}})
	}
	snap, err := catalog.Compile(1, []catalog.Tenant{{ID: "t1", Events: evs}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return snap.Events
}

func ruleSetup(t *testing.T) *bundle {
	t.Parallel()
	rc, sp := redistest.New(t)
	evs := ruleEvents(t)
	return &bundle{eng: &Engine{Redis: rc, Space: sp, TTL: time.Minute, MaxTTL: 5 * time.Minute},
		rc: rc, sp: sp, evs: evs, ctx: context.Background()}
}

// take marks seats of ev taken by someone else, bypassing the rule (as a
// stranding made before the rule was set, or by an order).
func (b *bundle) take(t *testing.T, ev string, labels ...string) {
	t.Helper()
	for _, l := range labels {
		b.setSeat(t, ev, l, "o:o01other")
	}
}

func (b *bundle) holdIn(t *testing.T, ev, tok string, labels ...string) error {
	t.Helper()
	_, err := b.eng.Hold(b.ctx, b.evs[ev], tok, labels)
	return err
}

// refused checks err is SEAT_RULE naming seat, in words.
func refused(t *testing.T, err error, seat, where string) {
	t.Helper()
	ae := apiErr(t, err, 409, "SEAT_RULE")
	if m, _ := ae.Data.(map[string]any); m["seatLabel"] != seat {
		t.Fatalf("data %v, want seatLabel %s", ae.Data, seat)
	}
	if want := fmt.Sprintf("would leave seat %s alone %s; add %s or pick other seats", seat, where, seat); !strings.Contains(ae.Message, want) {
		t.Fatalf("message %q, want it to say %q", ae.Message, want)
	}
}

func TestLenientRuleRefusesAMiddleGapOnly(t *testing.T) {
	b := ruleSetup(t)
	const ev = "ev_lenient"
	b.take(t, ev, "A-3")
	tok := b.token(t, ev)
	// A-4 would sit alone between.
	refused(t, b.holdIn(t, ev, tok, "A-5"), "A-4", "between taken seats")
	if got := b.seatsOf(t, ev, tok); len(got) != 0 || b.seat(t, ev, "A-5") != "" {
		t.Fatalf("a refused hold held %v", got)
	}
	// Taking the stranded seat along is fine; so is a gap of two, and a
	// seat alone at a row's end.
	for _, labels := range [][]string{{"A-5", "A-4"}, {"A-8"}, {"P-1"}, {"A-2"}} {
		if err := b.holdIn(t, ev, tok, labels...); err != nil {
			t.Fatalf("hold %v: %v", labels, err)
		}
	}
	if got := b.seatsOf(t, ev, tok); !reflect.DeepEqual(got, []string{"A-2", "A-4", "A-5", "A-8", "P-1"}) {
		t.Fatalf("held %v", got)
	}
}

func TestStrictRuleRefusesARowEndToo(t *testing.T) {
	b := ruleSetup(t)
	const ev = "ev_strict"
	tok := b.token(t, ev)
	refused(t, b.holdIn(t, ev, tok, "A-2"), "A-1", "at the end of its row")
	refused(t, b.holdIn(t, ev, tok, "A-9"), "A-10", "at the end of its row")
	refused(t, b.holdIn(t, ev, tok, "P-2"), "P-1", "at the end of its row")
	b.take(t, ev, "A-5")
	refused(t, b.holdIn(t, ev, tok, "A-7"), "A-6", "between taken seats")
	// A row of one seat is never stranded; a whole row of two is fine,
	// and so is a row end left with company.
	for _, labels := range [][]string{{"S-1"}, {"P-1", "P-2"}, {"A-1", "A-2"}, {"A-8"}} {
		if err := b.holdIn(t, ev, tok, labels...); err != nil {
			t.Fatalf("hold %v: %v", labels, err)
		}
	}
}

func TestOwnBookedAndOrderSeatsCountAsTaken(t *testing.T) {
	b := ruleSetup(t)
	const ev = "ev_lenient"
	tok := b.token(t, ev)
	if err := b.holdIn(t, ev, tok, "A-7"); err != nil {
		t.Fatal(err)
	}
	refused(t, b.holdIn(t, ev, tok, "A-9"), "A-8", "between taken seats")
	if err := b.holdIn(t, ev, tok, "A-9", "A-8"); err != nil {
		t.Fatal(err)
	}
	b.take(t, ev, "A-5") // handed to an order
	refused(t, b.holdIn(t, ev, tok, "A-3"), "A-4", "between taken seats")
	b.rc.Do(b.ctx, b.rc.B().Hset().Key(b.sp.Booked(ev)).FieldValue().FieldValue("A-1", "o01sold").Build())
	refused(t, b.holdIn(t, ev, tok, "A-3", "A-4"), "A-2", "between taken seats")
	// Holding again what the token holds strands nothing new.
	if err := b.holdIn(t, ev, tok, "A-7", "A-8"); err != nil {
		t.Fatal(err)
	}
}

func TestRuleNamesTheFirstStrandedSeatAndComesAfterConflicts(t *testing.T) {
	b := ruleSetup(t)
	const ev = "ev_lenient"
	b.take(t, ev, "A-2", "A-8")
	tok := b.token(t, ev)
	// would all be alone: A-3 is named.
	refused(t, b.holdIn(t, ev, tok, "A-6", "A-4"), "A-3", "between taken seats")
	// A seat someone holds is a conflict, even where the rule would refuse.
	apiErr(t, b.holdIn(t, ev, tok, "A-8", "A-4"), 409, "SEAT_CONFLICT")
}

func TestAnOlderStrandedSeatIsNotThisHoldsFault(t *testing.T) {
	b := ruleSetup(t)
	const ev = "ev_strict"
	b.take(t, ev, "A-2", "A-4") // are alone already
	tok := b.token(t, ev)
	if err := b.holdIn(t, ev, tok, "A-6", "A-5"); err != nil {
		t.Fatal(err)
	}
}

func TestRuleOffOrUnsetHoldsAnything(t *testing.T) {
	b := ruleSetup(t)
	for _, ev := range []string{"ev_off", "ev_unset"} {
		tok := b.token(t, ev)
		if err := b.holdIn(t, ev, tok, "A-2", "A-4", "P-2"); err != nil {
			t.Fatalf("%s: %v", ev, err)
		}
		if r := b.eng.Config(b.evs[ev]).SingleSeatRule; r != "off" {
			t.Fatalf("%s: config rule %q", ev, r)
		}
	}
	if r := b.eng.Config(b.evs["ev_strict"]).SingleSeatRule; r != "strict" {
		t.Fatalf("config rule %q", r)
	}
}

// The script and strands (best-available's filter) agree: random rows,
// random holds; whenever strands says a hold is fine the script holds it,
// and whenever it names seats the script refuses with the first of them.
func TestScriptAndStrandsAgree(t *testing.T) {
	b := ruleSetup(t)
	rnd := rand.New(rand.NewPCG(7, 11))
	for _, ev := range []string{"ev_lenient", "ev_strict"} {
		e := b.evs[ev]
		for round := 0; round < 60; round++ {
			// A fresh state of row A: each seat taken by someone else
			// with probability 1/3, or by the token with 1/6.
			for k := 1; k <= 10; k++ {
				b.freeSeat(ev, fmt.Sprint("A-", k))
			}
			tok := b.token(t, ev)
			taken := make([]bool, 11)
			for k := 1; k <= 10; k++ {
				l := fmt.Sprint("A-", k)
				switch x := rnd.IntN(6); {
				case x < 2:
					b.take(t, ev, l)
					taken[k] = true
				case x == 2:
					b.setSeat(t, ev, l, "h:"+tok)
					b.rc.Do(b.ctx, b.rc.B().Hset().Key(b.sp.Hold(ev, tok)).FieldValue().FieldValue("s:"+l, "1").Build())
					taken[k] = true
				}
			}
			var free []int
			for k := 1; k <= 10; k++ {
				if !taken[k] {
					free = append(free, k)
				}
			}
			if len(free) == 0 {
				continue
			}
			rnd.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
			held := free[:1+rnd.IntN(min(3, len(free)))]
			labels := make([]string, len(held))
			for i, k := range held {
				labels[i] = fmt.Sprint("A-", k)
			}
			want := strands(e.SeatMap.Rule(), 10, func(k int) bool { return taken[k] }, held)
			slices.Sort(want)
			err := b.holdIn(t, ev, tok, labels...)
			if len(want) == 0 {
				if err != nil {
					t.Fatalf("%s %v taken %v: script refused %v, strands found nothing", ev, labels, taken, err)
				}
				continue
			}
			ae := apiErr(t, err, 409, "SEAT_RULE")
			if got := ae.Data.(map[string]any)["seatLabel"]; got != fmt.Sprint("A-", want[0]) {
				t.Fatalf("%s %v taken %v: script names %v, strands %v", ev, labels, taken, got, want)
			}
		}
	}
}

func TestRowBlocksBestFirst(t *testing.T) {
	row := &catalog.Row{Label: "A", Seats: 10}
	free := make([]bool, 10)
	got := rowBlocks(catalog.SeatRuleOff, row, free, 2)
	want := [][]string{{"A-5", "A-6"}, {"A-4", "A-5"}, {"A-6", "A-7"}, {"A-3", "A-4"}, {"A-7", "A-8"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("blocks of 2 in an empty row: %v, want %v", got, want)
	}
	if got := rowBlocks(catalog.SeatRuleOff, row, free, 3)[0]; !reflect.DeepEqual(got, []string{"A-4", "A-5", "A-6"}) {
		t.Fatalf("best block of 3: %v (a tie takes the lower seats)", got)
	}
	// taken: under lenient, blocks that leave alone
	// are skipped (A-3..A-4 would be fine, A-2..A-3 would strand A-4).
	taken := make([]bool, 10)
	taken[4], taken[5] = true, true
	got = rowBlocks(catalog.SeatRuleLenient, row, taken, 2)
	want = [][]string{{"A-3", "A-4"}, {"A-7", "A-8"}, {"A-1", "A-2"}, {"A-9", "A-10"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("lenient blocks: %v, want %v", got, want)
	}
	// Under strict, A-9..A-10 would not strand (A-8 has A-7 free beside
	// it), but A-8..A-9 would strand A-10 at the row's end.
	for _, bl := range rowBlocks(catalog.SeatRuleStrict, row, taken, 2) {
		if bl[0] == "A-8" || bl[0] == "A-2" {
			t.Fatalf("strict offered %v", bl)
		}
	}
	// Where the rules differ: in an empty row of four, the middle pair
	// leaves alone at the row's ends, which only strict refuses.
	short := &catalog.Row{Label: "A", Seats: 4}
	none := make([]bool, 4)
	if got, want := rowBlocks(catalog.SeatRuleLenient, short, none, 2), [][]string{{"A-2", "A-3"}, {"A-1", "A-2"}, {"A-3", "A-4"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("lenient blocks in a row of four: %v, want %v", got, want)
	}
	if got, want := rowBlocks(catalog.SeatRuleStrict, short, none, 2), [][]string{{"A-1", "A-2"}, {"A-3", "A-4"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("strict blocks in a row of four: %v, want %v", got, want)
	}
}

func TestNeighboursAreWithinTwoInTheRow(t *testing.T) {
	evs := ruleEvents(t)
	got := neighbours(evs["ev_lenient"], []string{"A-1", "A-2", "A-10", "P-2", "S-1"})
	want := []string{"A-3", "A-4", "A-8", "A-9", "P-1"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("neighbours %v, want %v", got, want)
	}
	if got := neighbours(evs["ev_off"], []string{"A-5"}); got != nil {
		t.Fatalf("rule off reads neighbours %v", got)
	}
}

// releaseRefused checks err is the release's SEAT_RULE naming seat.
func releaseRefused(t *testing.T, err error, seat, where string) {
	t.Helper()
	ae := apiErr(t, err, 409, "SEAT_RULE")
	if m, _ := ae.Data.(map[string]any); m["seatLabel"] != seat {
		t.Fatalf("data %v, want seatLabel %s", ae.Data, seat)
	}
	if want := fmt.Sprintf("letting go of seat %s on its own would leave it alone %s", seat, where); !strings.Contains(ae.Message, want) {
		t.Fatalf("message %q, want it to say %q", ae.Message, want)
	}
}

// Releasing cannot get around the rule: letting go of the middle of three
// held seats (or, under strict, of a row end next to a held seat) is
// refused and changes nothing; letting go of two together, of the end of
// a block, or of everything (by nil or by naming every seat) is fine.
func TestPartialReleaseCannotStrandASeat(t *testing.T) {
	b := ruleSetup(t)
	for _, ev := range []string{"ev_lenient", "ev_strict"} {
		tok := b.token(t, ev)
		if err := b.holdIn(t, ev, tok, "A-1", "A-2", "A-3", "A-4"); err != nil {
			t.Fatal(err)
		}
		_, err := b.eng.Release(b.ctx, b.evs[ev], tok, []string{"A-2"})
		releaseRefused(t, err, "A-2", "between taken seats")
		_, err = b.eng.Release(b.ctx, b.evs[ev], tok, []string{"A-3", "A-1"})
		// A-3 would sit between; under strict, A-1 (named
		// first) between the row's end and A-2 too.
		if ev == "ev_strict" {
			releaseRefused(t, err, "A-1", "at the end of its row")
		} else {
			releaseRefused(t, err, "A-3", "between taken seats")
		}
		if got := b.seatsOf(t, ev, tok); !reflect.DeepEqual(got, []string{"A-1", "A-2", "A-3", "A-4"}) || b.seat(t, ev, "A-2") != "h:"+tok {
			t.Fatalf("%s: a refused release changed the hold: %v", ev, got)
		}
		if got, err := b.eng.Release(b.ctx, b.evs[ev], tok, []string{"A-3", "A-2"}); err != nil || !reflect.DeepEqual(got, []string{"A-2", "A-3"}) {
			t.Fatalf("%s: release two together: %v %v", ev, got, err)
		}
		// are left, apart: each alone may go only with the other.
		if got, err := b.eng.Release(b.ctx, b.evs[ev], tok, []string{"A-4", "A-1"}); err != nil || !reflect.DeepEqual(got, []string{"A-1", "A-4"}) {
			t.Fatalf("%s: release all by name: %v %v", ev, got, err)
		}
		if err := b.holdIn(t, ev, tok, "A-5", "A-6", "A-7"); err != nil {
			t.Fatal(err)
		}
		if got, err := b.eng.Release(b.ctx, b.evs[ev], tok, []string{"A-7"}); err != nil || !reflect.DeepEqual(got, []string{"A-7"}) {
			t.Fatalf("%s: release the end of a block: %v %v", ev, got, err)
		}
		b.take(t, ev, "A-4")
		if _, err := b.eng.Release(b.ctx, b.evs[ev], tok, nil); err != nil {
			t.Fatalf("%s: release all: %v", ev, err)
		}
	}
	// The rule off: anything goes.
	const off = "ev_off"
	tok := b.token(t, off)
	if err := b.holdIn(t, off, tok, "A-1", "A-2", "A-3"); err != nil {
		t.Fatal(err)
	}
	if got, err := b.eng.Release(b.ctx, b.evs[off], tok, []string{"A-2"}); err != nil || !reflect.DeepEqual(got, []string{"A-2"}) {
		t.Fatalf("rule off: %v %v", got, err)
	}
}
