package orders

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"hash"
	"strconv"
	"strings"

	"github.com/ticketd/ticketd/inventory/keys"
)

// An order id's random part is 15 bytes in lowercase base32 (24
// characters): 9 random bytes and the first 6 bytes of an HMAC, keyed with
// Service.IDKey, of those bytes, the channel and the event. So ticketd can
// tell, without any stored state, that it made an order id for a channel:
// an order it no longer knows (lost with Redis' state, or aged out long
// after it expired) is then answered as failed, never as "no such order".
const (
	idRandom = 9
	idMAC    = 6
)

// NewOrderID returns a fresh order id in the event's partition, all random
// (not minted: Minted never recognises it).
func NewOrderID(eventID string) string {
	b := make([]byte, idRandom+idMAC)
	_, _ = rand.Read(b)
	return keys.OrderID(eventID, lowerB32.EncodeToString(b))
}

// NewID mints an order id of owner for the event, as reserve mints one
// for a channel: storefront registrations use the owner "sf:<tenant>", which
// no channel id can be, so Minted tells their ids apart. Without an IDKey it
// is all random.
func (s *Service) NewID(eventID, owner string) string { return s.newOrderID(eventID, owner) }

// newOrderID mints an order id of channelID for the event; without an
// IDKey it is all random.
func (s *Service) newOrderID(eventID, channelID string) string {
	if len(s.IDKey) == 0 {
		return NewOrderID(eventID)
	}
	b := make([]byte, idRandom, idRandom+sha256.Size)
	_, _ = rand.Read(b)
	b = s.idMAC(b, channelID, eventID)
	return keys.OrderID(eventID, lowerB32.EncodeToString(b[:idRandom+idMAC]))
}

// Minted reports whether orderID was made by a reserve for channelID (or by
// NewID for that owner) under this service's IDKey.
func (s *Service) Minted(orderID, channelID string) bool {
	ev, ok := keys.OrderEvent(orderID)
	if !ok || len(s.IDKey) == 0 {
		return false
	}
	random := orderID[1:strings.IndexByte(orderID, '.')]
	raw, err := lowerB32.DecodeString(random)
	if err != nil || len(raw) != idRandom+idMAC {
		return false
	}
	want := s.idMAC(append(make([]byte, 0, idRandom+sha256.Size), raw[:idRandom]...), channelID, ev)
	return hmac.Equal(raw[idRandom:], want[idRandom:idRandom+idMAC])
}

// idMAC appends HMAC(IDKey, random ‖ 0 ‖ channel ‖ 0 ‖ event) to b, which
// holds the random bytes.
func (s *Service) idMAC(b []byte, channelID, eventID string) []byte {
	s.macOnce.Do(func() { s.macs.New = func() any { return hmac.New(sha256.New, s.IDKey) } })
	m := s.macs.Get().(hash.Hash)
	defer s.macs.Put(m)
	m.Reset()
	m.Write(b)
	m.Write([]byte{0})
	m.Write([]byte(channelID))
	m.Write([]byte{0})
	m.Write([]byte(eventID))
	return m.Sum(b)
}

// TicketID is the id of an order's i-th (0-based) ticket: the order id, '-'
// and the ticket's number from 1. The one spelling of a ticket id: reserve,
// a registration and the sync worker mint with it, Postgres checks it
// (orders_ticket_ids, migration 008), and it is what confirm answers and
// e-mails show.
func TicketID(orderID string, i int) string {
	return orderID + "-" + strconv.Itoa(i+1)
}

// Reference is the short order reference a buyer reads and quotes: the
// first ten characters of the id's random part (after its leading "o"),
// in capitals, in two groups of five: "o72atessijrh77igh2o24foeg.ev_x" is
// "72ATE-SSIJR". It is how the id begins, so support finds the order from
// it (docs/decisions.md, Order reference). The demo shop's pages make the
// same (Shop.orderRef, handlers/demosite). An id of another shape is its
// own reference.
func Reference(orderID string) string {
	dot := strings.IndexByte(orderID, '.')
	if len(orderID) < 11 || orderID[0] != 'o' || dot < 11 {
		return orderID
	}
	r := orderID[1:11]
	for _, c := range []byte(orderID[1:dot]) {
		if (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return orderID
		}
	}
	return strings.ToUpper(r[:5] + "-" + r[5:])
}
