package outbox

import "testing"

// Spellings of one mailbox share one hourly limit; other mailboxes do not.
func TestRateKeyFoldsSpellingsOfOneMailbox(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ a, b string }{
		{"Ada@Example.com", "ada@example.com"},
		{"ada+fest@example.com", "ada@example.com"},
		{" ada@example.com\t", "ada@example.com"},
		{"Ada Lovelace <ada+x@example.com>", "ada@example.com"},
		{"a.d.a@gmail.com", "ada@gmail.com"},
		{"A.da+promo@googlemail.com", "ada@gmail.com"},
	} {
		if ka, kb := RateKey(c.a), RateKey(c.b); ka != kb {
			t.Errorf("%q counts as %q, %q as %q: want one mailbox", c.a, ka, c.b, kb)
		}
	}
	for _, c := range []struct{ a, b string }{
		{"a.da@example.com", "ada@example.com"}, // dots matter outside gmail
		{"ada@example.com", "ada@example.org"},
		{"+ada@example.com", "@example.com"}, // a local part of a tag alone keeps it
	} {
		if RateKey(c.a) == RateKey(c.b) {
			t.Errorf("%q and %q share the limit of %q", c.a, c.b, RateKey(c.a))
		}
	}
}
