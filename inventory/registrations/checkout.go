package registrations

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/payments"
	"github.com/ticketd/ticketd/inventory/reply"
)

var checkoutScript = eval.Load("reg_checkout")

// discardTimeout bounds closing a session the protocol opened and nobody
// may pay.
const discardTimeout = 5 * time.Second

// OpenCheckout is the storefront's checkout-session protocol, for card and
// wallet payments alike: it opens a session with p for reg (as read by the
// caller: Get) and attaches it, so that only the newest session of a
// registration can be paid.
//
// A built-in processor's session (a *payments.Hosted itself: a wrapper of
// one is a processor like any other) is opened, the session
// the caller saw last is closed when it is one too, and the new one is
// recorded, all in one script: one Redis round trip. Another processor's
// session (Stripe) is created by its API first; the last one the caller
// saw is expired there before, so a payment already made on it stops the
// call (NotPayable "paid"). find resolves a recorded processor name (nil
// when this node has none of it). When a concurrent call attached a
// session after the caller's read, the script writes nothing and answers
// it: it is closed (paid, the call stops) and the script runs again, so
// no two sessions stay open and none is attached beside a paid one.
func (s *Service) OpenCheckout(ctx context.Context, reg Registration, p payments.Processor, req payments.CheckoutRequest,
	find func(name string) payments.Processor) (payments.Session, error) {
	okey, ok := s.Space.Order(reg.ID)
	if !ok {
		return payments.Session{}, ErrNotFound
	}
	ev, _ := keys.OrderEvent(reg.ID)
	seen, seenKey := "", ""
	if reg.SessionID != "" {
		seen = reg.Processor + ":" + reg.SessionID
		prev := find(reg.Processor)
		if seenKey = localKey(prev, reg.SessionID); seenKey == "" && prev != nil {
			paid, err := prev.Expire(ctx, reg.SessionID)
			if err != nil {
				return payments.Session{}, &ProcessorError{Op: "expire session", Err: err}
			}
			if paid {
				return payments.Session{}, NotPayable("paid")
			}
		}
	}
	ks := []string{okey, s.Space.Expiry(keys.Partition(ev)), okey, okey}
	args := []string{p.Name(), "", strconv.Itoa(MaxSessions), reg.ID, seen, "0", "0", ""}
	var sess payments.Session
	created := false // a session that exists at its processor already
	if l, ok := p.(*payments.Hosted); ok {
		prep, err := l.PrepareSession(req)
		if err != nil {
			return payments.Session{}, err
		}
		sess = prep.Session
		ks[2] = prep.Key
		args[5], args[7] = "1", prep.Expiry
		args = append(args, prep.Fields...)
	} else {
		var err error
		if sess, err = p.CreateSession(ctx, req); err != nil {
			return payments.Session{}, &ProcessorError{Op: "create session", Err: err}
		}
		created = true
	}
	// fail discards a session made at its processor that nobody may pay.
	fail := func(err error) (payments.Session, error) {
		if created {
			s.discard(ctx, p, sess.ID)
		}
		return payments.Session{}, err
	}
	if !validName(p.Name()) || sess.ID == "" || len(sess.ID) > 255 || strings.ContainsAny(sess.ID, " \t\r\n") {
		return fail(fmt.Errorf("registrations: checkout: processor %q or session id not usable", p.Name()))
	}
	args[1] = sess.ID
	for range attachTries {
		if seenKey != "" {
			ks[3], args[6] = seenKey, "1"
		} else {
			ks[3], args[6] = okey, "0"
		}
		args[4] = seen
		arr, err := eval.Array(ctx, s.Redis, checkoutScript, ks, args)
		if err == nil {
			err = checkoutReply(arr)
		}
		if !errors.Is(err, errAttachedSince) {
			if err != nil {
				return fail(err)
			}
			return sess, nil
		}
		// Another call attached a session after our read: it is closed
		// (a paid one stops this call: the registration is paid), and
		// ours goes after it.
		last, _ := eval.Str(arr, 1)
		name, id, _ := strings.Cut(last, ":")
		prev := find(name)
		if seen, seenKey = last, localKey(prev, id); seenKey != "" {
			continue // closed by the script, which checks it was not paid
		}
		if prev != nil {
			paid, err := prev.Expire(ctx, id)
			if err != nil {
				return fail(&ProcessorError{Op: "close the session attached since", Err: err})
			}
			if paid {
				return fail(NotPayable("paid"))
			}
		}
	}
	return fail(errors.New("registrations: checkout: other calls kept attaching sessions"))
}

// localKey is the hash of a built-in processor's session (one the
// checkout script closes itself), "" for any other processor's.
func localKey(p payments.Processor, sessionID string) string {
	if h, ok := p.(*payments.Hosted); ok {
		k, _ := h.SessionKey(sessionID)
		return k
	}
	return ""
}

// attachTries bounds the runs of reg_checkout one call makes while other
// calls for the same registration attach theirs.
const attachTries = 4

// errAttachedSince is reg_checkout's reply.SessionsChanged: the last
// session is not the one the caller saw.
var errAttachedSince = errors.New("registrations: checkout: a session was attached since the read")

// ProcessorError is a payment processor's failure during OpenCheckout (a
// built-in one's carries the 503 of ticketd's own Redis); any other error
// of OpenCheckout is ticketd's own.
type ProcessorError struct {
	Op  string
	Err error
}

func (e *ProcessorError) Error() string {
	return "registrations: processor: " + e.Op + ": " + e.Err.Error()
}
func (e *ProcessorError) Unwrap() error { return e.Err }

// checkoutReply is reg_checkout's refusal as an error; nil when attached.
func checkoutReply(arr []rueidis.RedisMessage) error {
	code, err := reply.Of(arr)
	if err != nil {
		return fmt.Errorf("registrations: checkout: %w", err)
	}
	switch code {
	case reply.OK:
		return nil
	case reply.NotPending:
		st, _ := eval.Str(arr, 1)
		if st == "" {
			return ErrNotFound
		}
		return NotPayable(st)
	case reply.TooManySessions:
		return NotPayable("too_many_sessions")
	case reply.Exists:
		return errors.New("registrations: checkout: session id collision")
	case reply.SessionsChanged:
		return errAttachedSince
	}
	return fmt.Errorf("registrations: checkout: %w", eval.ErrReply)
}

// discard closes a session of p that was opened and that nobody may pay,
// on a context of its own: the request's may be what ran out.
func (s *Service) discard(ctx context.Context, p payments.Processor, sessionID string) {
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), discardTimeout)
	defer cancel()
	if _, err := p.Expire(c, sessionID); err != nil {
		s.logger().Warn("registrations: close an unused checkout session", "processor", p.Name(), "err", err)
	}
}
