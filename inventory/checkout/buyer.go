package checkout

import (
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ticketd/ticketd/inventory/apierr"
)

// MaxBuyerName is the longest buyer name, in characters: a name is
// printed on every ticket and in the e-mails, and nobody's is longer.
const MaxBuyerName = 100

// Buyer is a validated buyer identity.
type Buyer struct{ Name, Email, Phone string }

// Fields names a surface's buyer fields, for the messages: the codes are
// the same on both surfaces.
type Fields struct{ Name, Email, Phone string }

// The buyer fields of each surface's body.
var (
	PartnerFields    = Fields{Name: "buyerName", Email: "buyerEmail", Phone: "buyerPhone"}
	StorefrontFields = Fields{Name: "name", Email: "email", Phone: "phone"}
)

// ValidateBuyer applies interface.md's buyer field rules before anything is
// reserved or charged; f names the fields as the caller's body does.
func ValidateBuyer(f Fields, name, email, phone *string) (Buyer, *apierr.Error) {
	var b Buyer
	if name == nil || strings.TrimSpace(*name) == "" {
		return b, apierr.Of("INVALID_BUYER_NAME", "%s is required", f.Name)
	}
	b.Name = strings.TrimSpace(*name)
	if utf8.RuneCountInString(b.Name) > MaxBuyerName || HasControl(b.Name) {
		return b, apierr.Of("INVALID_BUYER_NAME", "%s must be at most %d characters of text", f.Name, MaxBuyerName)
	}
	var e *apierr.Error
	if b.Email, e = ValidateEmail(f.Email, email); e != nil {
		return b, e
	}
	if phone != nil {
		b.Phone = strings.TrimSpace(*phone)
		if utf8.RuneCountInString(b.Phone) > 32 || HasControl(b.Phone) {
			return b, apierr.Of("INVALID_BUYER_PHONE", "%s must be at most 32 characters", f.Phone)
		}
	}
	return b, nil
}

// ValidateEmail is the buyer e-mail rule of ValidateBuyer alone (the
// waiting room's join takes an e-mail and nothing else of the buyer):
// the address trimmed, or INVALID_BUYER_EMAIL naming field.
func ValidateEmail(field string, email *string) (string, *apierr.Error) {
	if email == nil || strings.TrimSpace(*email) == "" {
		return "", apierr.Of("INVALID_BUYER_EMAIL", "%s is required", field)
	}
	addr := strings.TrimSpace(*email)
	if utf8.RuneCountInString(addr) > 200 || !validEmail(addr) {
		return "", apierr.Of("INVALID_BUYER_EMAIL", "%s must be a valid address of at most 200 characters", field)
	}
	return addr, nil
}

// validEmail accepts a bare addr-spec with a dotted domain ("a@b.co"), not a
// display-name form.
func validEmail(s string) bool {
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	dom := s[at+1:]
	return at > 0 && strings.Contains(dom, ".") && !strings.HasPrefix(dom, ".") && !strings.HasSuffix(dom, ".")
}

// HasControl reports whether s holds a control character (a NUL above all,
// which Postgres refuses in text).
func HasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}
