package room

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/roompass"
)

// placeID is the queue id of the buyer key bk's place in room roomID:
// 12 bytes (96 bits) of an HMAC under the room key, base64url, 16
// characters. Derived, so the e-mail finds its place without an entry of
// its own (a waiter costs Redis that much less), yet nobody without the
// key can tell from an id (shown in the audit) whose it is. No separator
// of the tokens below can occur in it.
func (s *Service) placeID(roomID, bk string) string {
	return b64.EncodeToString(mac(s.Key, "place", roomID, bk)[:12])
}

var b64 = base64.RawURLEncoding

// mac is the first 16 bytes of HMAC-SHA256(key, parts joined by NUL).
func mac(key []byte, parts ...string) []byte {
	h := hmac.New(sha256.New, key)
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(p))
	}
	return h.Sum(nil)[:16]
}

// Place is a place as its poll token names it: the queue id, and its rank
// and units when it joined (or joined again), from which a node answers a
// poll far from the head without Redis (frontier).
type Place struct {
	QueueID string
	// Showing is the showing whose room it is in ("" for an event's
	// room).
	Showing string
	// Rank is the place's score in the line (NaN: not known).
	Rank     float64
	Quantity int64
	// Maker is true for the token of the join that made the place (or
	// made it again): only it may leave. A second join of a live place
	// (whoever knows the e-mail) gets a token that reads the place only,
	// so knowing a buyer's address is not enough to take them out.
	Maker bool
}

// PollToken is the bearer token of a place's status and leave calls in
// room roomID: "<queueId>.<rank>.<units>.<m>.<mac>", the rank as the
// base64url of its float64 bits, m "1" for the maker's token; a showing's
// room adds the showing, base64url, before the mac. It names the place
// (and its room) and proves it was given by a join.
func (s *Service) PollToken(roomID string, p Place) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], math.Float64bits(p.Rank))
	maker := "0"
	if p.Maker {
		maker = "1"
	}
	body := p.QueueID + "." + b64.EncodeToString(b[:]) + "." + strconv.FormatInt(p.Quantity, 10) + "." + maker
	if _, sh := keys.SplitRoom(roomID); sh != "" {
		body += "." + b64.EncodeToString([]byte(sh))
	}
	return body + "." + b64.EncodeToString(mac(s.Key, "poll", roomID, body))
}

// PlaceOf checks a poll token of one of the event's rooms and returns its
// place (with the showing of its room); false when it is not one these
// rooms gave.
func (s *Service) PlaceOf(eventID, token string) (Place, bool) {
	parts := strings.Split(token, ".")
	if (len(parts) != 5 && len(parts) != 6) || parts[0] == "" {
		return Place{}, false
	}
	var showing string
	if len(parts) == 6 {
		sh, err := b64.DecodeString(parts[4])
		if err != nil || len(sh) == 0 {
			return Place{}, false
		}
		showing = string(sh)
	}
	sig := parts[len(parts)-1]
	got, err := b64.DecodeString(sig)
	if err != nil {
		return Place{}, false
	}
	body := token[:len(token)-len(sig)-1]
	if !hmac.Equal(got, mac(s.Key, "poll", keys.RoomID(eventID, showing), body)) {
		return Place{}, false
	}
	rb, err := b64.DecodeString(parts[1])
	if err != nil || len(rb) != 8 {
		return Place{}, false
	}
	qty, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return Place{}, false
	}
	return Place{QueueID: parts[0], Showing: showing, Rank: math.Float64frombits(binary.BigEndian.Uint64(rb)),
		Quantity: qty, Maker: parts[3] == "1"}, true
}

// Pass is a checked pass (roompass: the scripts that burn one answer its
// refusals there).
type Pass = roompass.Pass

// passFor signs the pass of the place of room roomID for its buyer key
// bk: "p1.<queueId>.<expiry ms, base 36>.<mac>", the mac over the room
// (its event, and showing), the place, the expiry and the buyer key of the
// e-mail it was given to, so it cannot be moved to another event, showing,
// place or buyer, and it says when it lapses
// without a lookup. On a seated event (cfg.Seated) the pass is "p2....",
// its mac without the buyer key: hold-token, which burns it there, carries
// no e-mail; the place names its buyer, and register-guest refuses another
// (QUEUE_PASS_INVALID), as it does for p1. It is a header value, never in
// a URL; Redis decides whether it is still live and unused.
func (s *Service) passFor(cfg *catalog.Room, roomID, queueID string, expMs int64, bk string) string {
	exp := strconv.FormatInt(expMs, 36)
	if cfg.Seated {
		return "p2." + queueID + "." + exp + "." + b64.EncodeToString(mac(s.Key, "pass", roomID, queueID, exp))
	}
	return "p1." + queueID + "." + exp + "." + b64.EncodeToString(mac(s.Key, "pass", roomID, queueID, exp, bk))
}

// CheckPass checks a pass for room roomID: ErrPassBad when it did not
// give it (a p1 pass: to the buyer of email; "" refuses a p1 pass, as
// hold-token, which knows no buyer, does), else the place and expiry it
// names. Whether the pass is still live, unused and the buyer's is the
// burning script's to say, by Redis' clock and state: a used pass is told
// so (QUEUE_PASS_USED) however late it comes back.
func (s *Service) CheckPass(roomID, pass, email string) (Pass, error) {
	parts := strings.Split(pass, ".")
	if len(parts) != 4 || parts[1] == "" {
		return Pass{}, ErrPassBad
	}
	qid, exp := parts[1], parts[2]
	var want []byte
	switch {
	case parts[0] == "p2":
		want = mac(s.Key, "pass", roomID, qid, exp)
	case parts[0] == "p1" && email != "":
		want = mac(s.Key, "pass", roomID, qid, exp, orders.BuyerKey(email))
	default:
		return Pass{}, ErrPassBad
	}
	got, err := b64.DecodeString(parts[3])
	if err != nil || !hmac.Equal(got, want) {
		// signed for another event, showing or place, or not by this room
		return Pass{}, ErrPassBad
	}
	ms, err := strconv.ParseInt(exp, 36, 64)
	if err != nil {
		return Pass{}, ErrPassBad
	}
	return Pass{QueueID: qid, ExpiresAt: time.UnixMilli(ms)}, nil
}

// PassToken is the name of the seat hold token pass makes on a seated
// event (seats.Engine.CreatePassToken): "h" and 26 lowercase base32
// characters of a mac under the room key over the event, the place and the
// pass's expiry, so a retry with the same pass names the same token and is
// answered it, and nobody without the pass can name it.
func (s *Service) PassToken(eventID string, p Pass) string {
	m := mac(s.Key, "hold token", eventID, p.QueueID, strconv.FormatInt(p.ExpiresAt.UnixMilli(), 10))
	return "h" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(m))
}

// ShuffleKey is room roomID's shuffle key (a showing's room has its own):
// a fair room ranks its pre-queue by HMAC-SHA256(ShuffleKey, queue id). It
// is secret until T0 and shown after, so anyone can recompute the order;
// Commitment is shown before.
func (s *Service) ShuffleKey(roomID string) []byte {
	return bytes.Clone(s.shuffleOf(roomID).key)
}

// Commitment is the SHA-256 of room roomID's shuffle key, hex: published
// before the room opens, it binds the room to the key it reveals at T0.
func (s *Service) Commitment(roomID string) string {
	return s.shuffleOf(roomID).commitment
}

// A shuffle is a room's shuffle key and its commitment, made once a node:
// every status poll shows the commitment (and the key after T0), and an
// HMAC and a hash a poll were about 4% of a waiting room's CPU. key is
// read only (ShuffleKey hands out copies).
type shuffle struct {
	key        []byte
	commitment string
}

// shuffleOf is room roomID's shuffle, made on first use. Room ids are the
// catalog's (the handlers ask only for an event's room), so the map holds
// one small entry per room this node served.
func (s *Service) shuffleOf(roomID string) *shuffle {
	if v, ok := s.shuffles.Load(roomID); ok {
		return v.(*shuffle)
	}
	h := hmac.New(sha256.New, s.Key)
	h.Write([]byte("shuffle\x00" + roomID))
	sh := &shuffle{key: h.Sum(nil)}
	sum := sha256.Sum256(sh.key)
	sh.commitment = hex.EncodeToString(sum[:])
	v, _ := s.shuffles.LoadOrStore(roomID, sh)
	return v.(*shuffle)
}

// Rank is a queue id's place in a fair room's shuffle under key, in
// [0, 1): the first 52 bits of HMAC-SHA256(key, queueId) over 2^52 (a
// float64 holds them exactly, as does Redis' score). Lower goes first.
func Rank(key []byte, queueID string) float64 {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(queueID))
	return float64(binary.BigEndian.Uint64(h.Sum(nil)[:8])>>12) / (1 << 52)
}

func (s *Service) shuffleRank(roomID, queueID string) float64 {
	return Rank(s.shuffleOf(roomID).key, queueID)
}
