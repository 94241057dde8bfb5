package checkout

import (
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ticketd/ticketd/inventory/apierr"
)

// Buyer is a validated buyer identity.
type Buyer struct{ Name, Email, Phone string }

// ValidateBuyer applies interface.md's buyer field rules before anything is
// reserved or charged.
func ValidateBuyer(name, email, phone *string) (Buyer, *apierr.Error) {
	var b Buyer
	if name == nil || strings.TrimSpace(*name) == "" {
		return b, apierr.Of("INVALID_BUYER_NAME", "buyerName is required")
	}
	b.Name = strings.TrimSpace(*name)
	if utf8.RuneCountInString(b.Name) > 200 || HasControl(b.Name) {
		return b, apierr.Of("INVALID_BUYER_NAME", "buyerName must be at most 200 characters of text")
	}
	if email == nil || strings.TrimSpace(*email) == "" {
		return b, apierr.Of("INVALID_BUYER_EMAIL", "buyerEmail is required")
	}
	b.Email = strings.TrimSpace(*email)
	if utf8.RuneCountInString(b.Email) > 200 || !validEmail(b.Email) {
		return b, apierr.Of("INVALID_BUYER_EMAIL", "buyerEmail must be a valid address of at most 200 characters")
	}
	if phone != nil {
		b.Phone = strings.TrimSpace(*phone)
		if utf8.RuneCountInString(b.Phone) > 32 || HasControl(b.Phone) {
			return b, apierr.Of("INVALID_BUYER_PHONE", "buyerPhone must be at most 32 characters")
		}
	}
	return b, nil
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
