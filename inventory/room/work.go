package room

import (
	"crypto/hmac"
	"crypto/sha256"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/orders"
)

// A room with proof of work (catalog Room.Work) asks every join for a
// solved challenge: the buyer asks for one (Challenge) for the e-mail it
// joins with, finds a nonce such that SHA-256(challenge ":" nonce) starts
// with the challenge's zero bits, and joins with both. A challenge is
// signed, not stored: it names the event, the buyer key, its expiry and
// its difficulty, so it serves that identity alone, and a bot queueing a
// thousand identities solves a thousand challenges. The difficulty adapts
// (workBits): the more joins a node sees a second, the harder.

// WorkTTL is how long a challenge may be solved and used.
const WorkTTL = 2 * time.Minute

// workBaseRate is the joins a second a node takes at the least difficulty;
// each doubling past it adds a bit (doubles a joiner's work).
const workBaseRate = 100

// Work is a join's solved challenge.
type Work struct {
	Challenge, Nonce string
}

// Challenge is a challenge to solve for a join.
type Challenge struct {
	Challenge string
	Bits      int
	ExpiresAt time.Time
}

// Errors of the proof of work.
var (
	ErrWorkRequired = apierr.Of("QUEUE_WORK_REQUIRED",
		"this event's waiting room asks each join for a proof of work: get a challenge (POST /v1/storefront/queue/{eventId}/challenge), solve it and join with work {challenge, nonce}")
	ErrWorkInvalid = apierr.Of("QUEUE_WORK_INVALID", "the proof of work is not a solved challenge of this event's waiting room for this e-mail address")
	ErrWorkExpired = apierr.Of("QUEUE_WORK_INVALID", "the proof of work's challenge expired: get a new one")
)

// Challenge gives a challenge for a join of eventID by email, at the
// difficulty of the moment; false when the room asks for no work.
func (s *Service) Challenge(cfg *catalog.Room, eventID, email string) (Challenge, bool) {
	if cfg.Work == nil {
		return Challenge{}, false
	}
	n := s.workBits(cfg.Work, eventID)
	exp := s.now().Add(WorkTTL).UnixMilli()
	body := "w1." + strconv.FormatInt(exp, 10) + "." + strconv.Itoa(n)
	sig := b64.EncodeToString(mac(s.Key, "work", eventID, orders.BuyerKey(email), body))
	return Challenge{Challenge: body + "." + sig, Bits: n, ExpiresAt: time.UnixMilli(exp)}, true
}

// checkWork says whether w is a solved, live challenge of eventID for the
// buyer key bk, at least as hard as the room's least difficulty.
func (s *Service) checkWork(cfg *catalog.Room, eventID, bk string, w Work) error {
	if w.Challenge == "" && w.Nonce == "" {
		return ErrWorkRequired.With("bits", s.workBits(cfg.Work, eventID))
	}
	if len(w.Challenge) > 128 || len(w.Nonce) > 64 {
		return ErrWorkInvalid
	}
	body, sig, ok := cut(w.Challenge)
	if !ok {
		return ErrWorkInvalid
	}
	parts := strings.Split(body, ".")
	got, err := b64.DecodeString(sig)
	if len(parts) != 3 || parts[0] != "w1" || err != nil || !hmac.Equal(got, mac(s.Key, "work", eventID, bk, body)) {
		return ErrWorkInvalid
	}
	exp, err1 := strconv.ParseInt(parts[1], 10, 64)
	n, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil || n < cfg.Work.MinBits {
		return ErrWorkInvalid
	}
	if s.now().UnixMilli() >= exp {
		return ErrWorkExpired
	}
	if !Solves(w.Challenge, w.Nonce, n) {
		return ErrWorkInvalid
	}
	return nil
}

// cut splits a signed token at its last dot.
func cut(tok string) (body, sig string, ok bool) {
	i := strings.LastIndexByte(tok, '.')
	if i < 0 {
		return "", "", false
	}
	return tok[:i], tok[i+1:], true
}

// Solves says whether SHA-256(challenge ":" nonce) starts with n zero
// bits: what a buyer's page searches nonces for.
func Solves(challenge, nonce string, n int) bool {
	sum := sha256.Sum256([]byte(challenge + ":" + nonce))
	zeros := 0
	for _, b := range sum {
		if b != 0 {
			zeros += bits.LeadingZeros8(b)
			break
		}
		zeros += 8
	}
	return zeros >= n
}

// workBits is the difficulty of the moment: the least, plus a bit for
// each doubling of the node's joins a second past workBaseRate.
func (s *Service) workBits(w *catalog.RoomWork, eventID string) int {
	rate := s.joinMeter(eventID).rate(s.now())
	n := w.MinBits
	if rate > workBaseRate {
		n += int(math.Log2(float64(rate) / workBaseRate))
	}
	return min(n, w.MaxBits)
}

// A meter counts a room's joins on this node, by second.
type meter struct {
	mu        sync.Mutex
	sec       int64 // the current second (Unix)
	now, last int64 // joins in it, and in the second before
}

func (s *Service) joinMeter(eventID string) *meter {
	if v, ok := s.meters.Load(eventID); ok {
		return v.(*meter)
	}
	v, _ := s.meters.LoadOrStore(eventID, &meter{})
	return v.(*meter)
}

func (m *meter) roll(at time.Time) {
	switch sec := at.Unix(); {
	case sec == m.sec:
	case sec == m.sec+1:
		m.sec, m.last, m.now = sec, m.now, 0
	default:
		m.sec, m.last, m.now = sec, 0, 0
	}
}

func (m *meter) add(at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.roll(at)
	m.now++
}

// rate is the joins of the last full second, or of the current one when
// more already.
func (m *meter) rate(at time.Time) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.roll(at)
	return max(m.last, m.now)
}
