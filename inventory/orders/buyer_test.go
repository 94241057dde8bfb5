package orders

import "testing"

// The spellings that reach one inbox are one buyer: case, spaces, a +tag,
// and for gmail.com and googlemail.com dots and the domain's two names.
// Other providers' dots are kept: a.b@example.com and ab@example.com may
// be two people.
func TestNormalizeEmailIsOneSpellingPerInbox(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{" Ann@Example.COM ", "ann@example.com"},
		{"ann+vip@example.com", "ann@example.com"},
		{"ann+a+b@example.com", "ann@example.com"},
		{"a.n.n@example.com", "a.n.n@example.com"},
		{"Ann.Lee+x@gmail.com", "annlee@gmail.com"},
		{"ann.lee@googlemail.com", "annlee@gmail.com"},
		{"A.N.N.L.E.E+tickets@GoogleMail.Com", "annlee@gmail.com"},
		{"+tag@example.com", "+tag@example.com"}, // nothing left of the local part: kept
		{"...@gmail.com", "...@gmail.com"},
		{"no-at-sign", "no-at-sign"},
		{"ann@sub.gmail.com", "ann@sub.gmail.com"},
	} {
		if got := NormalizeEmail(c.in); got != c.want {
			t.Errorf("NormalizeEmail(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if BuyerKey("Ann.Lee+x@googlemail.com") != BuyerKey("annlee@gmail.com") {
		t.Error("two spellings of one gmail inbox are two buyer keys")
	}
	if BuyerKey("a.b@example.com") == BuyerKey("ab@example.com") {
		t.Error("dots of a non-gmail address were dropped")
	}
}
