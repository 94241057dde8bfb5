package registrations

import (
	"errors"
	"testing"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/payments"
	"github.com/ticketd/ticketd/inventory/roundtrips"
)

// checkoutSetup is a bundle with one GA registration awaiting payment,
// b's client counting round trips and the built-in card on it.
func checkoutSetup(t *testing.T) (*bundle, *roundtrips.Client, *payments.Hosted, Registration) {
	t.Helper()
	b := setup(t)
	b.caps(t, evGA, "t:tk", "5", "ev", "5")
	counted, card := counting(b)
	reg, err := b.regs.Register(b.ctx, gaReq(1, 1000, "a@x.test"))
	if err != nil {
		t.Fatal(err)
	}
	// Loaded first, so that no count includes the load of a Redis that
	// has not seen the script yet (once in its life).
	if err := eval.LoadInto(b.ctx, b.rc, eval.Load("reg_checkout")); err != nil {
		t.Fatal(err)
	}
	return b, counted, card, reg
}

// counting is b's client counting its round trips, and the built-in card
// on it.
func counting(b *bundle) (*roundtrips.Client, *payments.Hosted) {
	counted := roundtrips.Wrap(b.rc, nil)
	return counted, payments.NewCard(payments.HostedConfig{Redis: counted, Space: b.sp, AppURL: "http://127.0.0.1:1"})
}

// checkoutOn opens a card checkout for reg with card through counted; it
// returns the session and the round trips it took.
func checkoutOn(t *testing.T, b *bundle, counted *roundtrips.Client, card *payments.Hosted, reg Registration) (payments.Session, int64, error) {
	t.Helper()
	regs := *b.regs
	regs.Redis = counted
	before := counted.Total()
	sess, err := regs.OpenCheckout(b.ctx, reg, card, payments.CheckoutRequest{RegistrationID: reg.ID, EventID: reg.EventID,
		Amount: reg.Total, Currency: "USD", ExpiresAt: reg.PayBy}, func(name string) payments.Processor {
		if name == card.Name() {
			return card
		}
		return nil
	})
	return sess, counted.Total() - before, err
}

func (b *bundle) read(t *testing.T, id string) Registration {
	t.Helper()
	reg, found, err := b.regs.Get(b.ctx, id)
	if err != nil || !found {
		t.Fatalf("read %s: %v %v", id, found, err)
	}
	return reg
}

// The built-in card's session is opened, the one seen before closed and
// the new one attached in one script: one round trip. A call that read
// the registration before another attached its session replaces that one
// and closes it, so only the newest session stays open.
func TestOpenCheckoutIsOneScriptAndClosesWhatItReplaced(t *testing.T) {
	b, counted, card, reg := checkoutSetup(t)
	stale := b.read(t, reg.ID) // no session yet
	first, trips, err := checkoutOn(t, b, counted, card, stale)
	if err != nil || trips != 1 {
		t.Fatalf("first checkout: %v, %d round trips, want 1", err, trips)
	}
	// The second call read the registration before the first attached.
	second, trips, err := checkoutOn(t, b, counted, card, stale)
	if err != nil || trips != 2 {
		t.Fatalf("racing checkout: %v, %d round trips, want 2 (attach, close the replaced)", err, trips)
	}
	third, trips, err := checkoutOn(t, b, counted, card, b.read(t, reg.ID))
	if err != nil || trips != 1 {
		t.Fatalf("third checkout: %v, %d round trips, want 1", err, trips)
	}
	for id, want := range map[string]string{first.ID: payments.StatusExpired, second.ID: payments.StatusExpired, third.ID: payments.StatusOpen} {
		s, found, err := card.Get(b.ctx, id)
		if err != nil || !found || s.Status != want {
			t.Errorf("session %s: %q %v %v, want %s", id, s.Status, found, err, want)
		}
	}
	if got := b.read(t, reg.ID); got.SessionID != third.ID || got.Processor != payments.Card {
		t.Fatalf("registration's last session %s %s, want %s", got.Processor, got.SessionID, third.ID)
	}
}

// A session paid on its page whose webhook has not arrived yet makes the
// registration not payable: no second session is opened beside it.
func TestOpenCheckoutRefusesBesideAPaidSession(t *testing.T) {
	b, counted, card, reg := checkoutSetup(t)
	paid, _, err := checkoutOn(t, b, counted, card, b.read(t, reg.ID))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := card.Pay(b.ctx, paid.ID, "4242424242424242"); err != nil {
		t.Fatal(err)
	}
	_, _, err = checkoutOn(t, b, counted, card, b.read(t, reg.ID))
	refusedBesidePaid(t, b, err, reg.ID, paid.ID, "checkout beside a paid session")
}

// refusedBesidePaid fails unless err is REGISTRATION_NOT_PAYABLE paid and
// the registration's last session is still the paid one.
func refusedBesidePaid(t *testing.T, b *bundle, err error, regID, paidID, what string) {
	t.Helper()
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.Code != "REGISTRATION_NOT_PAYABLE" || ae.Reason != "paid" {
		t.Fatalf("%s: %v", what, err)
	}
	if got := b.read(t, regID); got.SessionID != paidID {
		t.Fatalf("%s: registration's last session %s, want the paid %s", what, got.SessionID, paidID)
	}
}

// A call that read the registration before another attached a session
// the buyer then paid stops with the registration not payable, and
// attaches nothing after the paid session: a later call cannot open a
// second payable session beside it.
func TestOpenCheckoutAfterARacingPaidSessionAttachesNothing(t *testing.T) {
	b, counted, card, reg := checkoutSetup(t)
	stale := b.read(t, reg.ID)
	paid, _, err := checkoutOn(t, b, counted, card, stale)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := card.Pay(b.ctx, paid.ID, "4242424242424242"); err != nil {
		t.Fatal(err)
	}
	_, _, err = checkoutOn(t, b, counted, card, stale)
	refusedBesidePaid(t, b, err, reg.ID, paid.ID, "checkout racing a paid session")
	_, _, err = checkoutOn(t, b, counted, card, b.read(t, reg.ID))
	refusedBesidePaid(t, b, err, reg.ID, paid.ID, "a later checkout beside the paid session")
}
