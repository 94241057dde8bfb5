package seats

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/redistest"
)

func cents(c money.Cents) *money.Cents { return &c }

// testEvents compiles a small catalog: ev_seated has row A (10 seats at
// 40.00), row B (5 seats, unpriced), area "floor" (cap 100) and tables T1,
// T2; ev_crowd has row C (20 seats at 10.00); ev_ga has no seat map.
func testEvents(t *testing.T) map[string]*catalog.CompiledEvent {
	t.Helper()
	tenants := []catalog.Tenant{{ID: "t1", Events: []catalog.Event{
		{ID: "ev_seated", Status: catalog.StatusOnSale, SeatMap: &catalog.SeatMap{
			Categories: []catalog.Category{{ID: "stalls", Name: "Stalls", Price: cents(4000)}, {ID: "box", Name: "Box"}},
			Rows:       []catalog.Row{{Label: "A", Seats: 10, Category: "stalls"}, {Label: "B", Seats: 5, Category: "box"}},
			GAAreas:    []catalog.GAArea{{ID: "floor", Name: "Floor", Capacity: 100, Category: "stalls"}},
			Tables:     []catalog.Table{{ID: "T1", Seats: 4, Category: "stalls"}, {ID: "T2", Seats: 2, Category: "stalls"}},
		}},
		{ID: "ev_crowd", Status: catalog.StatusOnSale, SeatMap: &catalog.SeatMap{
			Categories: []catalog.Category{{ID: "std", Name: "Standard", Price: cents(1000)}},
			Rows:       []catalog.Row{{Label: "C", Seats: 20, Category: "std"}},
		}},
		{ID: "ev_ga", Status: catalog.StatusOnSale, Tickets: []catalog.Ticket{{ID: "tk", Price: 100, Capacity: 10}}},
	}}}
	snap, err := catalog.Compile(1, tenants, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return snap.Events
}

type bundle struct {
	eng *Engine
	rc  rueidis.Client
	sp  keys.Space
	ev  *catalog.CompiledEvent
	evs map[string]*catalog.CompiledEvent
	ctx context.Context
}

func setup(t *testing.T) *bundle {
	t.Parallel()
	rc, sp := redistest.New(t)
	evs := testEvents(t)
	return &bundle{eng: &Engine{Redis: rc, Space: sp, TTL: time.Minute, MaxTTL: 5 * time.Minute},
		rc: rc, sp: sp, ev: evs["ev_seated"], evs: evs, ctx: context.Background()}
}

func (b *bundle) token(t *testing.T, ev string) string {
	t.Helper()
	tok := NewToken()
	if _, err := b.eng.CreateToken(b.ctx, ev, tok); err != nil {
		t.Fatal(err)
	}
	return tok
}

func (b *bundle) holdFields(t *testing.T, ev, tok string) map[string]string {
	t.Helper()
	m, err := b.rc.Do(b.ctx, b.rc.B().Hgetall().Key(b.sp.Hold(ev, tok)).Build()).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// seatsOf lists the labels a token's hash holds, sorted.
func (b *bundle) seatsOf(t *testing.T, ev, tok string) []string {
	t.Helper()
	var out []string
	for f := range b.holdFields(t, ev, tok) {
		if l, ok := strings.CutPrefix(f, "s:"); ok {
			out = append(out, l)
		}
	}
	sortLabels(out)
	return out
}

func (b *bundle) expireTime(t *testing.T, key string) int64 {
	t.Helper()
	v, err := b.rc.Do(b.ctx, b.rc.B().Pexpiretime().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func apiErr(t *testing.T, err error, status int, code string) *apierr.Error {
	t.Helper()
	var ae *apierr.Error
	if !errors.As(err, &ae) {
		t.Fatalf("got %v, want %d %s", err, status, code)
	}
	if ae.Status != status || ae.Code != code {
		t.Fatalf("got %d %s (%s), want %d %s", ae.Status, ae.Code, ae.Message, status, code)
	}
	return ae
}

func dataList(t *testing.T, ae *apierr.Error, name string) []string {
	t.Helper()
	m, ok := ae.Data.(map[string]any)
	if !ok {
		t.Fatalf("data %#v has no %s", ae.Data, name)
	}
	l, _ := m[name].([]string)
	return l
}

func TestHoldTakesSeatsWithTheTokensExpiry(t *testing.T) {
	b := setup(t)
	tok := NewToken()
	exp, err := b.eng.CreateToken(b.ctx, b.ev.ID, tok)
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.eng.Hold(b.ctx, b.ev, tok, []string{"A-10", "A-2", "A-2"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"A-2", "A-10"}; !reflect.DeepEqual(res.SeatLabels, want) || res.HoldToken != tok {
		t.Fatalf("held %v by %s, want %v", res.SeatLabels, res.HoldToken, want)
	}
	if res.Subtotal != 8000 || !res.ExpiresAt.Equal(exp) {
		t.Fatalf("subtotal %v expires %v, want 80.00 and %v", res.Subtotal, res.ExpiresAt, exp)
	}
	h := b.holdFields(t, b.ev.ID, tok)
	if h["exp"] != strconv.FormatInt(exp.UnixMilli(), 10) || h["first"] == "" || h["s:A-2"] != "1" || h["s:A-10"] != "1" || len(h) != 4 {
		t.Fatalf("hold hash %v", h)
	}
	for _, l := range res.SeatLabels {
		if v := b.seat(t, b.ev.ID, l); v != "h:"+tok {
			t.Fatalf("seat %s held by %q, want h:%s", l, v, tok)
		}
		if got := b.seatExp(t, b.ev.ID, l); got != exp.UnixMilli() {
			t.Fatalf("seat %s expires at %d, want %d (the token's)", l, got, exp.UnixMilli())
		}
	}
	if got := b.expireTime(t, b.sp.Hold(b.ev.ID, tok)); got != exp.UnixMilli() {
		t.Fatalf("hold hash expires at %d, want %d", got, exp.UnixMilli())
	}

	// Holding again keeps the seats and adds new ones; the expiry stays.
	res, err = b.eng.Hold(b.ctx, b.ev, tok, []string{"A-2", "A-3"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"A-2", "A-3", "A-10"}; !reflect.DeepEqual(res.SeatLabels, want) || res.Subtotal != 12000 || !res.ExpiresAt.Equal(exp) {
		t.Fatalf("re-hold gave %v %v %v", res.SeatLabels, res.Subtotal, res.ExpiresAt)
	}
}

func TestCreateTokenIsIdempotent(t *testing.T) {
	b := setup(t)
	tok := NewToken()
	exp1, err := b.eng.CreateToken(b.ctx, b.ev.ID, tok)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.eng.Hold(b.ctx, b.ev, tok, []string{"A-1"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	exp2, err := b.eng.CreateToken(b.ctx, b.ev.ID, tok)
	if err != nil {
		t.Fatal(err)
	}
	if !exp1.Equal(exp2) || !slices.Equal(b.seatsOf(t, b.ev.ID, tok), []string{"A-1"}) {
		t.Fatalf("second create changed the token: %v -> %v, seats %v", exp1, exp2, b.seatsOf(t, b.ev.ID, tok))
	}
	if d := time.Until(exp1); d < 50*time.Second || d > 61*time.Second {
		t.Fatalf("expiry %v from now, want about the 1m TTL", d)
	}
	if !ValidToken(tok) || len(tok) != 27 || tok == NewToken() {
		t.Fatalf("token %q", tok)
	}
}

func TestHoldConflictIsAllOrNothing(t *testing.T) {
	b := setup(t)
	t1, t2 := b.token(t, b.ev.ID), b.token(t, b.ev.ID)
	if _, err := b.eng.Hold(b.ctx, b.ev, t1, []string{"A-1", "A-2"}); err != nil {
		t.Fatal(err)
	}
	_, err := b.eng.Hold(b.ctx, b.ev, t2, []string{"A-3", "A-2", "A-4", "A-1"})
	ae := apiErr(t, err, 409, "SEAT_CONFLICT")
	if got := dataList(t, ae, "conflicts"); !reflect.DeepEqual(got, []string{"A-2", "A-1"}) {
		t.Fatalf("conflicts %v, want [A-2 A-1]", got)
	}
	if got := b.seatsOf(t, b.ev.ID, t2); len(got) != 0 {
		t.Fatalf("losing token holds %v", got)
	}
	for _, l := range []string{"A-3", "A-4"} {
		if v := b.seat(t, b.ev.ID, l); v != "" {
			t.Fatalf("free seat %s got key %q after a failed hold", l, v)
		}
	}
	if v := b.seat(t, b.ev.ID, "A-1"); v != "h:"+t1 {
		t.Fatalf("A-1 = %q, want the first token", v)
	}
	// The losing token is still usable for free seats.
	if _, err := b.eng.Hold(b.ctx, b.ev, t2, []string{"A-3"}); err != nil {
		t.Fatal(err)
	}
}

func TestBookedAndOrderSeatsConflict(t *testing.T) {
	b := setup(t)
	b.rc.Do(b.ctx, b.rc.B().Hset().Key(b.sp.Booked(b.ev.ID)).FieldValue().FieldValue("A-5", "o01abc").Build())
	b.setSeat(t, b.ev.ID, "A-6", "o:o01xyz")
	tok := b.token(t, b.ev.ID)
	_, err := b.eng.Hold(b.ctx, b.ev, tok, []string{"A-4", "A-5", "A-6"})
	ae := apiErr(t, err, 409, "SEAT_CONFLICT")
	if got := dataList(t, ae, "conflicts"); !reflect.DeepEqual(got, []string{"A-5", "A-6"}) {
		t.Fatalf("conflicts %v", got)
	}
	if v := b.seat(t, b.ev.ID, "A-5"); v != "" {
		t.Fatalf("booked seat got a seat key %q", v)
	}
	if v := b.seat(t, b.ev.ID, "A-4"); v != "" {
		t.Fatalf("A-4 held despite the conflict: %q", v)
	}
}

// The commonest conflicts of a rush, seats every one of which is booked
// or a registration's, are answered before the holds that lapse are read
// (seat_hold's early answers): the answer is the same, every requested
// seat named in the order asked, nothing held, and the token keeps what it
// held. A gone token is still told so first.
func TestBookedAndRegisteredSeatsConflictWhole(t *testing.T) {
	b := setup(t)
	b.rc.Do(b.ctx, b.rc.B().Hset().Key(b.sp.Booked(b.ev.ID)).FieldValue().FieldValue("A-5", "o01abc").FieldValue("A-6", "o01abc").Build())
	b.rc.Do(b.ctx, b.rc.B().Hset().Key(b.sp.RegSeats(b.ev.ID)).FieldValue().FieldValue("A-7", "o:o01reg").FieldValue("A-8", "o:o01reg").Build())
	tok := b.token(t, b.ev.ID)
	if _, err := b.eng.Hold(b.ctx, b.ev, tok, []string{"A-1"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]string{{"A-6", "A-5"}, {"A-7", "A-8"}, {"A-5", "A-8", "A-6"}} {
		_, err := b.eng.Hold(b.ctx, b.ev, tok, want)
		ae := apiErr(t, err, 409, "SEAT_CONFLICT")
		if got := dataList(t, ae, "conflicts"); !reflect.DeepEqual(got, want) {
			t.Fatalf("hold of %v: conflicts %v", want, got)
		}
		if got := b.seatsOf(t, b.ev.ID, tok); !reflect.DeepEqual(got, []string{"A-1"}) {
			t.Fatalf("after the hold of %v the token holds %v, want [A-1]", want, got)
		}
	}
	// with a free seat among them, only the taken ones are named
	_, err := b.eng.Hold(b.ctx, b.ev, tok, []string{"A-4", "A-5"})
	if got := dataList(t, apiErr(t, err, 409, "SEAT_CONFLICT"), "conflicts"); !reflect.DeepEqual(got, []string{"A-5"}) {
		t.Fatalf("conflicts %v, want [A-5]", got)
	}
	if _, err := b.eng.Hold(b.ctx, b.ev, NewToken(), []string{"A-5", "A-6"}); !errors.Is(err, ErrHoldExpired) {
		t.Fatalf("a gone token's hold of booked seats: %v, want ErrHoldExpired", err)
	}
}

func TestHoldRejectsBadRequests(t *testing.T) {
	b := setup(t)
	tok := b.token(t, b.ev.ID)

	_, err := b.eng.Hold(b.ctx, b.ev, tok, []string{"A-1", "B-2"})
	ae := apiErr(t, err, 400, "SEAT_NOT_PRICED")
	if got := dataList(t, ae, "seats"); !reflect.DeepEqual(got, []string{"B-2"}) {
		t.Fatalf("unpriced %v", got)
	}
	_, err = b.eng.Hold(b.ctx, b.ev, tok, []string{"A-1", "A-11", "Z-1", "A-01"})
	ae = apiErr(t, err, 400, "SEAT_NOT_FOUND")
	if !strings.Contains(ae.Message, "A-11, Z-1, A-01") {
		t.Fatalf("message %q does not name the seats", ae.Message)
	}
	apiErr(t, errOf(b.eng.Hold(b.ctx, b.ev, tok, nil)), 400, "INVALID_REQUEST")
	many := make([]string, MaxLabels+1)
	for i := range many {
		many[i] = "A-1"
	}
	apiErr(t, errOf(b.eng.Hold(b.ctx, b.ev, tok, many)), 400, "INVALID_REQUEST")
	apiErr(t, errOf(b.eng.Hold(b.ctx, b.ev, "Bad{tok}:x", []string{"A-1"})), 400, "INVALID_HOLD_TOKEN")
	apiErr(t, errOf(b.eng.Hold(b.ctx, b.evs["ev_ga"], tok, []string{"A-1"})), 400, "NOT_SEATED")
	if got := b.seatsOf(t, b.ev.ID, tok); len(got) != 0 {
		t.Fatalf("rejected requests held %v", got)
	}

	// A token that was never created (or timed out) is hold_expired.
	ae = apiErr(t, errOf(b.eng.Hold(b.ctx, b.ev, NewToken(), []string{"A-1"})), 409, "HOLD_EXPIRED")
	if ae.Reason != "hold_expired" {
		t.Fatalf("reason %q", ae.Reason)
	}
	if v := b.seat(t, b.ev.ID, "A-1"); v != "" {
		t.Fatalf("a gone token held A-1: %q", v)
	}
}

func errOf[T any](_ T, err error) error { return err }

// Many buyers racing for overlapping seats: every seat ends with at most one
// holder, and the seat key and the token hash agree on who it is.
func TestContendedHoldsNeverDoubleHold(t *testing.T) {
	b := setup(t)
	ev := b.evs["ev_crowd"]
	const buyers = 200
	type outcome struct {
		tok  string
		want []string
		res  HoldResult
		err  error
	}
	outs := make([]outcome, buyers)
	var wg sync.WaitGroup
	for i := range buyers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := &outs[i]
			o.tok = NewToken()
			if _, o.err = b.eng.CreateToken(b.ctx, ev.ID, o.tok); o.err != nil {
				return
			}
			for _, n := range rand.Perm(20)[:1+rand.IntN(3)] {
				o.want = append(o.want, "C-"+strconv.Itoa(n+1))
			}
			o.res, o.err = b.eng.Hold(b.ctx, ev, o.tok, o.want)
		}()
	}
	wg.Wait()

	owner := map[string]string{}
	for _, k := range redistest.Keys(t, b.rc, b.sp) {
		_, tok, ok := strings.Cut(k, ":hold:")
		if !ok {
			continue
		}
		for _, l := range b.seatsOf(t, ev.ID, tok) {
			if prev, dup := owner[l]; dup {
				t.Fatalf("seat %s listed by tokens %s and %s", l, prev, tok)
			}
			owner[l] = tok
		}
	}
	winners := 0
	for _, o := range outs {
		var ae *apierr.Error
		switch {
		case o.err == nil:
			winners++
			for _, l := range o.want {
				if owner[l] != o.tok {
					t.Fatalf("%s won %v but %s is owned by %q", o.tok, o.want, l, owner[l])
				}
			}
		case errors.As(o.err, &ae) && ae.Code == "SEAT_CONFLICT":
			if got := b.seatsOf(t, ev.ID, o.tok); len(got) != 0 {
				t.Fatalf("loser %s holds %v", o.tok, got)
			}
			for _, l := range dataList(t, ae, "conflicts") {
				if owner[l] == "" || owner[l] == o.tok || !slices.Contains(o.want, l) {
					t.Fatalf("conflict %s for %s, owner %q", l, o.tok, owner[l])
				}
			}
		default:
			t.Fatalf("unexpected error %v", o.err)
		}
	}
	for n := 1; n <= 20; n++ {
		l := "C-" + strconv.Itoa(n)
		v := b.seat(t, ev.ID, l)
		if tok := owner[l]; (tok == "" && v != "") || (tok != "" && v != "h:"+tok) {
			t.Fatalf("seat %s key %q, hash owner %q", l, v, tok)
		}
	}
	if winners == 0 || len(owner) == 0 {
		t.Fatalf("nobody won (%d winners)", winners)
	}
}

func TestTimedOutHoldLeavesNoKeys(t *testing.T) {
	b := setup(t)
	b.eng.TTL = 300 * time.Millisecond
	t1 := b.token(t, b.ev.ID)
	b.token(t, b.ev.ID) // a token that never holds anything expires too
	if _, err := b.eng.Hold(b.ctx, b.ev, t1, []string{"A-1", "A-2", "A-3"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	var left []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		left = redistest.Keys(t, b.rc, b.sp)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) != 0 {
		t.Fatalf("keys left after the hold timed out: %v", left)
	}
	ae := apiErr(t, errOf(b.eng.Hold(b.ctx, b.ev, t1, []string{"A-4"})), 409, "HOLD_EXPIRED")
	if ae.Reason != "hold_expired" {
		t.Fatalf("reason %q", ae.Reason)
	}
	apiErr(t, errOf(b.eng.Extend(b.ctx, b.ev.ID, t1)), 409, "HOLD_EXPIRED")
	b.eng.TTL = time.Minute
	if _, err := b.eng.Hold(b.ctx, b.ev, b.token(t, b.ev.ID), []string{"A-1", "A-2", "A-3"}); err != nil {
		t.Fatalf("freed seats cannot be held again: %v", err)
	}
}

func TestExtendResetsTTLUpToTheCap(t *testing.T) {
	b := setup(t)
	b.eng.TTL, b.eng.MaxTTL = 2*time.Second, 3*time.Second
	tok := b.token(t, b.ev.ID)
	if _, err := b.eng.Hold(b.ctx, b.ev, tok, []string{"A-1", "A-2"}); err != nil {
		t.Fatal(err)
	}
	h := b.holdFields(t, b.ev.ID, tok)
	first, _ := strconv.ParseInt(h["first"], 10, 64)
	exp0, _ := strconv.ParseInt(h["exp"], 10, 64)
	if exp0 != first+2000 {
		t.Fatalf("created with exp %d, first %d", exp0, first)
	}
	allExpireAt := func(want int64) {
		t.Helper()
		if got := b.expireTime(t, b.sp.Hold(b.ev.ID, tok)); got != want {
			t.Fatalf("hold hash expires at %d, want %d", got, want)
		}
		for _, l := range []string{"A-1", "A-2"} {
			if got := b.seatExp(t, b.ev.ID, l); got != want {
				t.Fatalf("seat %s expires at %d, want %d", l, got, want)
			}
		}
		if got := b.holdFields(t, b.ev.ID, tok)["exp"]; got != strconv.FormatInt(want, 10) {
			t.Fatalf("hash exp %s, want %d", got, want)
		}
	}

	time.Sleep(300 * time.Millisecond)
	exp1, err := b.eng.Extend(b.ctx, b.ev.ID, tok)
	if err != nil {
		t.Fatal(err)
	}
	e1 := exp1.UnixMilli()
	if e1 < first+2300 || e1 > first+3000 {
		t.Fatalf("extended to first+%dms, want now+2s (>= first+2.3s, <= cap)", e1-first)
	}
	allExpireAt(e1)

	time.Sleep(1100 * time.Millisecond)
	exp2, err := b.eng.Extend(b.ctx, b.ev.ID, tok)
	if err != nil {
		t.Fatal(err)
	}
	if exp2.UnixMilli() != first+3000 {
		t.Fatalf("extended to first+%dms, want the cap first+3000ms", exp2.UnixMilli()-first)
	}
	allExpireAt(first + 3000)
	if _, err := b.eng.Extend(b.ctx, b.ev.ID, tok); err != nil {
		t.Fatal(err)
	}
	allExpireAt(first + 3000)

	apiErr(t, errOf(b.eng.Extend(b.ctx, b.ev.ID, NewToken())), 409, "HOLD_EXPIRED")
	apiErr(t, errOf(b.eng.Extend(b.ctx, b.ev.ID, "x")), 400, "INVALID_HOLD_TOKEN")
}

func TestReleaseFreesOnlyTheTokensSeats(t *testing.T) {
	b := setup(t)
	t1, t2 := b.token(t, b.ev.ID), b.token(t, b.ev.ID)
	if _, err := b.eng.Hold(b.ctx, b.ev, t1, []string{"A-1", "A-2", "A-3", "A-4"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.eng.Hold(b.ctx, b.ev, t2, []string{"A-5"}); err != nil {
		t.Fatal(err)
	}
	// A-4 was handed to a pending order by a reserve.
	b.setSeat(t, b.ev.ID, "A-4", "o:o01xyz")
	b.rc.Do(b.ctx, b.rc.B().Hdel().Key(b.sp.Hold(b.ev.ID, t1)).Field("s:A-4").Build())

	got, err := b.eng.Release(b.ctx, b.ev, t1, []string{"A-2", "A-5", "A-4"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []string{"A-2"}) {
		t.Fatalf("released %v, want [A-2]", got)
	}
	if v := b.seat(t, b.ev.ID, "A-5"); v != "h:"+t2 {
		t.Fatalf("another token's seat was touched: %q", v)
	}
	if v := b.seat(t, b.ev.ID, "A-4"); v != "o:o01xyz" {
		t.Fatalf("an order's seat was touched: %q", v)
	}
	if v := b.seat(t, b.ev.ID, "A-2"); v != "" {
		t.Fatalf("released seat still has key %q", v)
	}
	if s := b.seatsOf(t, b.ev.ID, t1); !reflect.DeepEqual(s, []string{"A-1", "A-3"}) {
		t.Fatalf("token holds %v", s)
	}

	got, err = b.eng.Release(b.ctx, b.ev, t1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []string{"A-1", "A-3"}) {
		t.Fatalf("released all %v", got)
	}
	if s := b.seatsOf(t, b.ev.ID, t1); len(s) != 0 {
		t.Fatalf("token still holds %v", s)
	}
	// The token lives on and can hold again, including what it released.
	if res, err := b.eng.Hold(b.ctx, b.ev, t1, []string{"A-2"}); err != nil || !slices.Equal(res.SeatLabels, []string{"A-2"}) {
		t.Fatalf("hold after release: %v %v", res, err)
	}

	for _, tok := range []string{NewToken(), t2} {
		got, err = b.eng.Release(b.ctx, b.ev, tok, []string{"A-1"})
		if err != nil || got == nil || len(got) != 0 {
			t.Fatalf("release by a token that holds nothing there: %v %v", got, err)
		}
	}
	got, err = b.eng.Release(b.ctx, b.ev, NewToken(), nil)
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("release all of an unknown token: %v %v", got, err)
	}
	apiErr(t, errOf(b.eng.Release(b.ctx, b.ev, t1, []string{})), 400, "INVALID_REQUEST")
	apiErr(t, errOf(b.eng.Release(b.ctx, b.ev, "NOPE", nil)), 400, "INVALID_HOLD_TOKEN")
}

func TestAvailabilityShowsHeldBookedAreasAndTables(t *testing.T) {
	b := setup(t)
	tok := b.token(t, b.ev.ID)
	if _, err := b.eng.Hold(b.ctx, b.ev, tok, []string{"A-10", "A-1"}); err != nil {
		t.Fatal(err)
	}
	ev := b.ev.ID
	for _, c := range []rueidis.Completed{
		b.setSeatCmd(ev, "A-4", "o:o01xyz"),
		b.rc.B().Hset().Key(b.sp.Booked(ev)).FieldValue().FieldValue("A-3", "o01a").FieldValue("B-1", "o01b").Build(),
		b.rc.B().Hset().Key(b.sp.Caps(ev)).FieldValue().FieldValue("a:floor", "100").FieldValue("tb:T1", "1").FieldValue("tb:T2", "1").Build(),
		b.rc.B().Hset().Key(b.sp.Sold(ev)).FieldValue().FieldValue("a:floor", "30").FieldValue("tb:T1", "1").Build(),
	} {
		if err := b.rc.Do(b.ctx, c).Error(); err != nil {
			t.Fatal(err)
		}
	}
	av, err := b.eng.Availability(b.ctx, b.ev)
	if err != nil {
		t.Fatal(err)
	}
	want := Availability{
		Held:   []string{"A-1", "A-4", "A-10"},
		Booked: []string{"A-3", "B-1"},
		Areas:  map[string]int64{"floor": 70},
		Tables: map[string]bool{"T1": false, "T2": true},
	}
	if !reflect.DeepEqual(av, want) {
		t.Fatalf("availability %+v, want %+v", av, want)
	}

	if _, err := b.eng.Release(b.ctx, b.ev, tok, nil); err != nil {
		t.Fatal(err)
	}
	av, err = b.eng.Availability(b.ctx, b.ev)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(av.Held, []string{"A-4"}) {
		t.Fatalf("held after release %v", av.Held)
	}

	// An empty event answers with empty lists, not nulls.
	crowd, err := b.eng.Availability(b.ctx, b.evs["ev_crowd"])
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(crowd)
	if string(js) != `{"held":[],"booked":[],"areas":{},"tables":{}}` {
		t.Fatalf("json %s", js)
	}
	apiErr(t, errOf(b.eng.Availability(b.ctx, b.evs["ev_ga"])), 400, "NOT_SEATED")
}

// Availability reads big maps in MGET chunks; a seat past the first chunk
// must still show.
func TestAvailabilityOfAMapBiggerThanOneChunk(t *testing.T) {
	b := setup(t)
	tenants := []catalog.Tenant{{ID: "t1", Events: []catalog.Event{{ID: "ev_big", SeatMap: &catalog.SeatMap{
		Categories: []catalog.Category{{ID: "c", Name: "C", Price: cents(100)}},
		Rows:       []catalog.Row{{Label: "R", Seats: 2500, Category: "c"}},
	}}}}}
	snap, err := catalog.Compile(1, tenants, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := snap.Events["ev_big"]
	tok := b.token(t, ev.ID)
	if _, err := b.eng.Hold(b.ctx, ev, tok, []string{"R-1", "R-1000", "R-1001", "R-2500"}); err != nil {
		t.Fatal(err)
	}
	av, err := b.eng.Availability(b.ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"R-1", "R-1000", "R-1001", "R-2500"}; !reflect.DeepEqual(av.Held, want) {
		t.Fatalf("held %v, want %v", av.Held, want)
	}
}

func TestConfigIsTheSeatMapWithPrices(t *testing.T) {
	b := setup(t)
	js, err := json.Marshal(b.eng.Config(b.ev))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"eventId":"ev_seated",` +
		`"categories":[{"id":"stalls","name":"Stalls","price":40.00},{"id":"box","name":"Box","price":null}],` +
		`"rows":[{"label":"A","seats":10,"category":"stalls"},{"label":"B","seats":5,"category":"box"}],` +
		`"gaAreas":[{"id":"floor","name":"Floor","capacity":100,"category":"stalls"}],` +
		`"tables":[{"id":"T1","seats":4,"category":"stalls","price":160.00},{"id":"T2","seats":2,"category":"stalls","price":80.00}],` +
		`"singleSeatRule":"off"}`
	if string(js) != want {
		t.Fatalf("config\n got %s\nwant %s", js, want)
	}
	if js, _ := json.Marshal(b.eng.Config(b.evs["ev_ga"])); !strings.Contains(string(js), `"rows":[]`) {
		t.Fatalf("config of an unseated event %s", js)
	}
}

func TestHeldReadsTheTokensSeatsWithoutChangingThem(t *testing.T) {
	b := setup(t)
	tok := NewToken()
	exp, err := b.eng.CreateToken(b.ctx, b.ev.ID, tok)
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.eng.Held(b.ctx, b.ev, tok)
	if err != nil || len(res.SeatLabels) != 0 || res.Subtotal != 0 || !res.ExpiresAt.Equal(exp) {
		t.Fatalf("empty token: %+v, %v", res, err)
	}
	if _, err := b.eng.Hold(b.ctx, b.ev, tok, []string{"A-10", "A-2"}); err != nil {
		t.Fatal(err)
	}
	res, err = b.eng.Held(b.ctx, b.ev, tok)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"A-2", "A-10"}; !reflect.DeepEqual(res.SeatLabels, want) || res.Subtotal != 8000 || !res.ExpiresAt.Equal(exp) || res.HoldToken != tok {
		t.Fatalf("held %+v", res)
	}
	if _, err := b.eng.Held(b.ctx, b.ev, NewToken()); !errors.Is(err, ErrHoldExpired) {
		t.Fatalf("gone token: %v, want ErrHoldExpired", err)
	}
	if _, err := b.eng.Held(b.ctx, b.ev, "nope"); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("bad token: %v, want ErrInvalidToken", err)
	}
}
