// Package tickets signs and verifies the QR text of issued tickets
// (docs/tickets.md) and derives, from TICKETD_SECRETS_KEY, every key that
// takes: an Ed25519 key pair per event, so a door scanner verifies offline
// with the event's public key, and the MAC key of the buyer's ticket page
// links. Nothing is stored: every node and ticketctl derive the same keys.
package tickets

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Version is the tag every QR text of this format starts with. It is part
// of the signed text, so a signature can never be taken for another format.
const Version = "TD1"

// MaxText bounds the QR text Verify reads; longer input is refused unread.
const MaxText = 2048

// DevelopmentSecretsKey is what ticketd uses when TICKETD_SECRETS_KEY is
// unset (a development setup). It is public: `ticketctl verify` uses it
// only when asked to (-dev), and says so.
const DevelopmentSecretsKey = "ticketd-development-secrets-key"

var b64 = base64.RawURLEncoding.Strict()

// Ticket is what a QR code carries.
type Ticket struct {
	ID        string // the ticket id, "<orderId>-<n>"
	EventID   string
	Admission string // the admission label, e.g. "General Admission" or "Row A, Seat 12"
}

// Errors Verify and Parse return, wrapped with detail; compare with errors.Is.
var (
	ErrMalformed = errors.New("tickets: not a ticketd ticket code")
	ErrVersion   = errors.New("tickets: unknown ticket code version")
	ErrSignature = errors.New("tickets: signature does not verify")
	ErrKey       = errors.New("tickets: not an Ed25519 public key")
)

// Keys derives ticket keys from one secrets key. The zero value is not
// usable; make one with NewKeys. It is safe for concurrent use.
type Keys struct {
	signing []byte // HMAC key of the per-event Ed25519 seeds
	pages   []byte // HMAC key of ticket page links
}

// NewKeys derives the ticket keys of a deployment from its
// TICKETD_SECRETS_KEY. Each purpose has its own subkey, so a page MAC and
// an Ed25519 seed never come from the same HMAC input.
func NewKeys(secretsKey string) *Keys {
	signing, pages := Subkeys(secretsKey)
	return &Keys{signing: signing, pages: pages}
}

// Subkeys returns the two keys NewKeys derives from secretsKey: the root
// of the per-event signing seeds and the ticket page MAC key. Exported so
// the secrets test searches the stores for the keys actually used.
func Subkeys(secretsKey string) (signingRoot, pages []byte) {
	return mac([]byte(secretsKey), "ticketd ticket keys v1"), mac([]byte(secretsKey), "ticketd ticket pages v1")
}

func mac(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// PrivateKey returns the event's signing key: its seed is
// HMAC-SHA256(HMAC-SHA256(secretsKey, "ticketd ticket keys v1"), eventID).
func (k *Keys) PrivateKey(eventID string) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(mac(k.signing, eventID))
}

// VerifyKey returns the event's public key.
func (k *Keys) VerifyKey(eventID string) ed25519.PublicKey {
	return k.PrivateKey(eventID).Public().(ed25519.PublicKey)
}

// PublicKey returns the event's public key as door scanners take it: the
// raw 32 bytes in unpadded base64url (what GET
// /v1/storefront/events/:id/ticket-key publishes).
func (k *Keys) PublicKey(eventID string) string {
	return b64.EncodeToString(k.VerifyKey(eventID))
}

// ParsePublicKey reads a public key in PublicKey's form.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	b, err := b64.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: want %d bytes in unpadded base64url", ErrKey, ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}

// Sign returns the QR text of t, signed with its event's key:
// TD1.<b64url(id)>.<b64url(eventId)>.<b64url(admission)>.<b64url(sig)>,
// sig = Ed25519 over the text before the last dot.
func (k *Keys) Sign(t Ticket) string {
	body := body(t)
	sig := ed25519.Sign(k.PrivateKey(t.EventID), []byte(body))
	return body + "." + b64.EncodeToString(sig)
}

func body(t Ticket) string {
	return Version + "." + b64.EncodeToString([]byte(t.ID)) + "." + b64.EncodeToString([]byte(t.EventID)) +
		"." + b64.EncodeToString([]byte(t.Admission))
}

// Parse reads a QR text without checking its signature: enough to learn
// the event whose key verifies it. Use Verify before trusting anything.
func Parse(text string) (Ticket, error) {
	t, _, _, err := split(text)
	return t, err
}

// Verify checks text against the event's public key and returns the ticket
// it carries. The error says why not: ErrMalformed, ErrVersion or
// ErrSignature (a tampered field, or another event's or deployment's key).
func Verify(text string, pub ed25519.PublicKey) (Ticket, error) {
	if len(pub) != ed25519.PublicKeySize {
		return Ticket{}, ErrKey
	}
	t, signed, sig, err := split(text)
	if err != nil {
		return Ticket{}, err
	}
	if !ed25519.Verify(pub, []byte(signed), sig) {
		return Ticket{}, ErrSignature
	}
	return t, nil
}

// split parses text into its ticket, the signed part and the signature.
func split(text string) (t Ticket, signed string, sig []byte, err error) {
	text = strings.TrimSpace(text)
	if len(text) > MaxText {
		return t, "", nil, fmt.Errorf("%w: longer than %d characters", ErrMalformed, MaxText)
	}
	// Base64 decoders skip CR and LF: without this, a text with a line
	// break inside a field would verify as a second, different code.
	for i := range len(text) {
		if c := text[i]; !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return t, "", nil, fmt.Errorf("%w: byte %d is %q, not one of A-Z a-z 0-9 - _ and the dot", ErrMalformed, i, c)
		}
	}
	parts := strings.Split(text, ".")
	if len(parts) > 0 && parts[0] != Version {
		if strings.HasPrefix(parts[0], "TD") {
			return t, "", nil, fmt.Errorf("%w: %q (this build reads %s)", ErrVersion, parts[0], Version)
		}
		return t, "", nil, fmt.Errorf("%w: it does not start with %q", ErrMalformed, Version+".")
	}
	if len(parts) != 5 {
		return t, "", nil, fmt.Errorf("%w: %d dot-separated fields, want 5", ErrMalformed, len(parts))
	}
	var fields [3]string
	for i, name := range []string{"ticket id", "event id", "admission"} {
		b, err := b64.DecodeString(parts[i+1])
		if err != nil || (len(b) == 0 && i < 2) {
			return t, "", nil, fmt.Errorf("%w: the %s is not unpadded base64url", ErrMalformed, name)
		}
		fields[i] = string(b)
	}
	sig, err = b64.DecodeString(parts[4])
	if err != nil || len(sig) != ed25519.SignatureSize {
		return t, "", nil, fmt.Errorf("%w: the signature is not %d bytes of unpadded base64url", ErrMalformed, ed25519.SignatureSize)
	}
	t = Ticket{ID: fields[0], EventID: fields[1], Admission: fields[2]}
	return t, text[:strings.LastIndexByte(text, '.')], sig, nil
}
