package main

import (
	"net/mail"
	"strings"
	"unicode/utf8"

	"github.com/ticketd/ticketd/inventory/apierr"
)

// buyer is a validated buyer identity.
type buyer struct{ name, email string }

// validateBuyer applies the same rules ticketd does (name and a bare e-mail
// address, each at most 200 characters), so both servers do the same work
// and refuse the same requests.
func validateBuyer(name, email *string) (buyer, *apierr.Error) {
	var b buyer
	if name == nil || strings.TrimSpace(*name) == "" {
		return b, apierr.BadRequest("INVALID_BUYER_NAME", "buyerName is required")
	}
	b.name = strings.TrimSpace(*name)
	if utf8.RuneCountInString(b.name) > 200 || strings.ContainsFunc(b.name, isControl) {
		return b, apierr.BadRequest("INVALID_BUYER_NAME", "buyerName must be at most 200 characters of text")
	}
	if email == nil || strings.TrimSpace(*email) == "" {
		return b, apierr.BadRequest("INVALID_BUYER_EMAIL", "buyerEmail is required")
	}
	b.email = strings.TrimSpace(*email)
	if utf8.RuneCountInString(b.email) > 200 || !validEmail(b.email) {
		return b, apierr.BadRequest("INVALID_BUYER_EMAIL", "buyerEmail must be a valid address of at most 200 characters")
	}
	return b, nil
}

func validEmail(s string) bool {
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	dom := s[at+1:]
	return at > 0 && strings.Contains(dom, ".") && !strings.HasPrefix(dom, ".") && !strings.HasSuffix(dom, ".")
}

func isControl(r rune) bool { return r < 0x20 || (r >= 0x7f && r < 0xa0) }
