package scenario

import (
	"testing"

	channelapi "github.com/ticketd/ticketd/handlers/channel"
	"github.com/ticketd/ticketd/inventory/money"
)

// TestSignerMatchesTicketd: the bench's allocation-free signer must sign
// exactly as ticketd verifies, or every confirm would be refused.
func TestSignerMatchesTicketd(t *testing.T) {
	s := newSigner("sk_bench")
	var dst []byte
	for _, c := range []struct {
		order  string
		amount money.Cents
		ref    string
	}{{"o17abcdef", 2650, "ref-1"}, {"o03x", 5, "bench-r1-7"}, {"o63zz", 100000, ""}} {
		dst = s.sign(dst[:0], []byte(c.order), c.amount.Append(nil), c.ref)
		if want := channelapi.Signature("sk_bench", c.order, c.amount, c.ref); string(dst) != want {
			t.Errorf("sign(%s, %s, %s) = %s, want %s", c.order, c.amount, c.ref, dst, want)
		}
	}
}

func TestParseCentsAgreesWithMoney(t *testing.T) {
	for _, in := range []string{"26.50", "26.5", "26", "0.05", "1000000.99", "0"} {
		got, ok := parseCents([]byte(in))
		want, err := money.Parse(in)
		if !ok || err != nil || got != want {
			t.Errorf("parseCents(%q) = %d, %v; money.Parse = %d, %v", in, got, ok, want, err)
		}
	}
	for _, bad := range []string{"", "1.234", "-1", "1e3", "1.2.3", `"1"`} {
		if _, ok := parseCents([]byte(bad)); ok {
			t.Errorf("parseCents(%q) accepted", bad)
		}
	}
}
