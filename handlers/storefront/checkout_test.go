package storefront_test

import (
	"context"
	"testing"
	"time"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/payments"
)

// gatedCard is the test card whose CreateSession waits, once entered,
// until the test releases it.
type gatedCard struct {
	*payments.Hosted
	entered, release chan struct{}
}

func (g *gatedCard) CreateSession(ctx context.Context, req payments.CheckoutRequest) (payments.Session, error) {
	g.entered <- struct{}{}
	<-g.release
	return g.Hosted.CreateSession(ctx, req)
}

func sessionStatus(t *testing.T, s *servertest.Server, id string) string {
	t.Helper()
	hs, found, err := s.Card.Get(context.Background(), id)
	if err != nil || !found {
		t.Fatalf("session %s: found %v, %v", id, found, err)
	}
	return hs.Status
}

// Two checkout calls for one registration at once (a double click): each
// read the registration before the other attached its session, so neither
// closed the other's. Only the newest may stay payable: the call attaching
// second closes the session attached meanwhile.
func TestConcurrentCheckoutsLeaveOnlyTheNewestSessionOpen(t *testing.T) {
	t.Parallel()
	g := &gatedCard{entered: make(chan struct{}), release: make(chan struct{})}
	s := servertest.StartStorefront(t, servertest.Options{StorefrontCard: func(h *payments.Hosted) payments.Processor {
		g.Hosted = h
		return g
	}})
	reg := s.MustRegister(t, servertest.Guest("sf_ga", map[string]any{"selectedTicketId": "tk_adult", "quantity": 2}))
	body := cardBody(reg, map[string]any{"selectedTicketId": "tk_adult", "quantity": 2, "selectedTicketAmount": 50})
	results := make(chan *servertest.Response, 2)
	for range 2 {
		go func() { results <- s.Front(t, "POST", "/card/create-checkout-session", body) }()
	}
	<-g.entered
	<-g.entered // both calls have read the registration: no session attached yet
	var ids []string
	for range 2 {
		g.release <- struct{}{}
		r := <-results // one call at a time runs to its end
		expect(t, r, 200, "")
		var sess session
		r.Decode(t, &sess)
		ids = append(ids, sess.SessionID)
	}
	older, newer := ids[0], ids[1]
	if st := sessionStatus(t, s, older); st != payments.StatusExpired {
		t.Errorf("the session attached first is %s, want expired", st)
	}
	if st := sessionStatus(t, s, newer); st != payments.StatusOpen {
		t.Errorf("the newest session is %s, want open", st)
	}
	got, _, err := s.Registrations.Get(context.Background(), reg.RegistrationID)
	if err != nil || got.SessionID != newer {
		t.Fatalf("registration's session %q (%v), want %s", got.SessionID, err, newer)
	}
}

// hangingCard opens its sessions only once the request's context has
// run out, as a processor slower than the request's budget does, and
// tells the test each session's id.
type hangingCard struct {
	*payments.Hosted
	opened chan string
}

func (h hangingCard) CreateSession(ctx context.Context, req payments.CheckoutRequest) (payments.Session, error) {
	<-ctx.Done()
	sess, err := h.Hosted.CreateSession(context.WithoutCancel(ctx), req)
	if err == nil {
		h.opened <- sess.ID
	}
	return sess, err
}

// A session the registration could not take (here: the request's time ran
// out before it was attached) is closed all the same: closing it must not
// depend on the request's context, which may be what failed.
func TestSessionThatCouldNotBeAttachedIsClosed(t *testing.T) {
	t.Parallel()
	card := hangingCard{opened: make(chan string, 1)}
	s := servertest.StartStorefront(t, servertest.Options{StorefrontTimeout: time.Second,
		StorefrontCard: func(h *payments.Hosted) payments.Processor { card.Hosted = h; return card }})
	reg := s.MustRegister(t, servertest.Guest("sf_ga", map[string]any{"selectedTicketId": "tk_adult", "quantity": 2}))
	r := s.Front(t, "POST", "/card/create-checkout-session",
		cardBody(reg, map[string]any{"selectedTicketId": "tk_adult", "quantity": 2, "selectedTicketAmount": 50}))
	expect(t, r, 503, "SERVICE_UNAVAILABLE")
	if st := sessionStatus(t, s, <-card.opened); st != payments.StatusExpired {
		t.Fatalf("the unattached session is %s, want expired", st)
	}
}
