package room

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
)

// solve finds the nonce of a challenge, as a buyer's page does.
func solve(t *testing.T, c Challenge) string {
	t.Helper()
	for i := range 1 << 24 {
		if n := strconv.Itoa(i); Solves(c.Challenge, n, c.Bits) {
			return n
		}
	}
	t.Fatalf("no nonce solves %+v", c)
	return ""
}

// A room with proof of work lets in a join that solved its e-mail's
// challenge, and refuses one without, another identity's, a tampered, an
// unsolved or an expired one, each with its code.
func TestJoinsCarryASolvedChallenge(t *testing.T) {
	f := setup(t, 5)
	cfg := f.open(false, time.Minute)
	cfg.Work = &catalog.RoomWork{MinBits: 6, MaxBits: 10}
	c, ok := f.s.Challenge(cfg, ev, "Ann@Example.com")
	if !ok || c.Bits != 6 || !c.ExpiresAt.After(time.Now()) {
		t.Fatalf("challenge %+v %v, want 6 bits, live", c, ok)
	}
	nonce := solve(t, c)
	// a nonce that does not solve it (a random one does, one time in 2^bits)
	wrong := nonce + "x"
	for i := 0; Solves(c.Challenge, wrong, c.Bits); i++ {
		wrong = nonce + "x" + strconv.Itoa(i)
	}
	join := func(email string, w Work) error {
		_, err := f.s.Join(f.ctx, cfg, JoinRequest{EventID: ev, Email: email, Quantity: 1, Work: w})
		return err
	}
	if err := join("ann@example.com", Work{}); code(err) != "QUEUE_WORK_REQUIRED" || !strings.Contains(errorData(err), "bits") {
		t.Fatalf("no work: %v, want QUEUE_WORK_REQUIRED with the bits", err)
	}
	for name, w := range map[string]Work{
		"another identity's":    {c.Challenge, nonce},
		"tampered (fewer bits)": {strings.Replace(c.Challenge, ".6.", ".1.", 1), nonce},
		"unsolved":              {c.Challenge, wrong},
		"not a challenge":       {"w1.x", "1"},
	} {
		email := "ann@example.com"
		if name == "another identity's" {
			email = "bob@example.com"
		}
		if err := join(email, w); code(err) != "QUEUE_WORK_INVALID" {
			t.Errorf("%s: %v, want QUEUE_WORK_INVALID", name, err)
		}
	}
	if err := join("ann+queue@example.com", Work{c.Challenge, nonce}); err != nil {
		t.Fatalf("the solved challenge of the same identity (however spelt): %v", err)
	}
	f.s.Now = func() time.Time { return time.Now().Add(WorkTTL + time.Second) }
	if err := join("ann@example.com", Work{c.Challenge, nonce}); !errors.Is(err, ErrWorkExpired) {
		t.Fatalf("an expired challenge: %v, want QUEUE_WORK_INVALID (expired)", err)
	}
}

// errorData is the top-level fields an API error carries, printed.
func errorData(err error) string {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return fmt.Sprint(ae.Fields)
	}
	return ""
}

// The difficulty rises a bit for each doubling of the joins a node saw
// in a second past the base rate, up to the room's most.
func TestTheWorkGrowsWithTheJoinRate(t *testing.T) {
	s := &Service{Key: []byte("k")}
	at := time.Unix(1_800_000_000, 0)
	s.Now = func() time.Time { return at }
	w := &catalog.RoomWork{MinBits: 10, MaxBits: 14}
	if n := s.workBits(w, ev); n != 10 {
		t.Fatalf("no joins: %d bits, want 10", n)
	}
	m := s.joinMeter(ev)
	for range 4 * workBaseRate {
		m.add(at)
	}
	if n := s.workBits(w, ev); n != 12 {
		t.Fatalf("4x the base rate: %d bits, want 12", n)
	}
	at = at.Add(time.Second) // the last full second still counts
	if n := s.workBits(w, ev); n != 12 {
		t.Fatalf("a second later: %d bits, want 12", n)
	}
	for range 64 * workBaseRate {
		m.add(at)
	}
	if n := s.workBits(w, ev); n != 14 {
		t.Fatalf("64x the base rate: %d bits, want the most, 14", n)
	}
	at = at.Add(3 * time.Second)
	if n := s.workBits(w, ev); n != 10 {
		t.Fatalf("quiet again: %d bits, want 10", n)
	}
}
