package checkout

import (
	"strings"
	"testing"

	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/pricing"
)

func ptr(s string) *string { return &s }

func TestValidateBuyerCodes(t *testing.T) {
	for _, c := range []struct {
		name, email, phone *string
		code               string
	}{
		{nil, ptr("a@b.co"), nil, "INVALID_BUYER_NAME"},
		{ptr("Ann\x00"), ptr("a@b.co"), nil, "INVALID_BUYER_NAME"},
		{ptr(strings.Repeat("é", MaxBuyerName+1)), ptr("a@b.co"), nil, "INVALID_BUYER_NAME"},
		{ptr("Ann"), ptr("Ann <a@b.co>"), nil, "INVALID_BUYER_EMAIL"},
		{ptr("Ann"), ptr("a@localhost"), nil, "INVALID_BUYER_EMAIL"},
		{ptr("Ann"), ptr("a@b.co"), ptr("0123456789012345678901234567890123"), "INVALID_BUYER_PHONE"},
		{ptr(" Ann "), ptr(" a@b.co "), nil, ""},
	} {
		b, e := ValidateBuyer(PartnerFields, c.name, c.email, c.phone)
		if c.code == "" {
			if e != nil || b != (Buyer{Name: "Ann", Email: "a@b.co"}) {
				t.Errorf("%+v, %v; want Ann a@b.co trimmed", b, e)
			}
		} else if e == nil || e.Code != c.code || e.Status != 400 {
			t.Errorf("%v, want 400 %s", e, c.code)
		}
	}
	// 100 characters is a name; the probe's 2.7 MB e-mail carried a name
	// of the attacker's text.
	name := strings.Repeat("é", MaxBuyerName)
	if b, e := ValidateBuyer(StorefrontFields, &name, ptr("a@b.co"), nil); e != nil || b.Name != name {
		t.Errorf("a name of %d characters: %v", MaxBuyerName, e)
	}
}

// Each surface's messages name the fields as its body does: the
// storefront's register-guest sends name and email, the partner's reserve
// buyerName and buyerEmail.
func TestValidateBuyerNamesTheSurfacesFields(t *testing.T) {
	_, e := ValidateBuyer(StorefrontFields, ptr("Ann"), nil, nil)
	if e == nil || e.Code != "INVALID_BUYER_EMAIL" || e.Message != "email is required" {
		t.Errorf("storefront: %v", e)
	}
	_, e = ValidateBuyer(PartnerFields, nil, ptr("a@b.co"), nil)
	if e == nil || e.Code != "INVALID_BUYER_NAME" || e.Message != "buyerName is required" {
		t.Errorf("partner: %v", e)
	}
}

// TestFingerprintIsWhatIsBought: the same lines in another order are the
// same request; another buyer, total or hold token is another.
func TestFingerprintIsWhatIsBought(t *testing.T) {
	b := Buyer{Name: "Ann", Email: "a@b.co"}
	q := pricing.Quote{Total: 500, Lines: []orders.Line{{Kind: "ticket", RefID: "a", Quantity: 1}, {Kind: "ticket", RefID: "b", Quantity: 2}}}
	swapped := q
	swapped.Lines = []orders.Line{q.Lines[1], q.Lines[0]}
	fp := Fingerprint("ev\x1f", b, "", "", q)
	if Fingerprint("ev\x1f", b, "", "", swapped) != fp {
		t.Fatal("line order changed the fingerprint")
	}
	other := q
	other.Total = 501
	for _, d := range []string{
		Fingerprint("ev\x1f", Buyer{Name: "Bo", Email: "a@b.co"}, "", "", q),
		Fingerprint("ev\x1f", b, "", "htoken1234", q),
		Fingerprint("ev\x1f", b, "", "", other),
		Fingerprint("ev\x1fs1", b, "", "", q),
	} {
		if d == fp {
			t.Fatal("a different request has the same fingerprint")
		}
	}
}

func TestNewRecord(t *testing.T) {
	ev := &catalog.CompiledEvent{Event: &catalog.Event{ID: "ev1"}}
	ev.TenantID = "t1"
	q := pricing.Quote{Subtotal: 1000, Fee: 50, Total: 1050,
		Admissions: []pricing.Admission{{Kind: "ticket", RefID: "ga"}, {Kind: "seat", RefID: "stalls", Label: "A-1"}}}
	r := NewRecord(ev, q, Buyer{Name: "Ann", Email: "a@b.co"}, Origin{Source: "storefront"})
	if r.EventID != "ev1" || r.TenantID != "t1" || r.Source != "storefront" || r.Total != 1050 || r.Currency != "USD" ||
		len(r.Tickets) != 2 || r.Tickets[1].Label != "A-1" || r.BuyerEmail != "a@b.co" {
		t.Fatalf("record %+v", r)
	}
	if ValidateCallback("https://shop.example/ok") != nil || ValidateCallback("ftp://x") == nil || ValidateCallback("/rel") == nil {
		t.Fatal("callback check")
	}
}
