package tickets_test

import (
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/pricing"
	"github.com/ticketd/ticketd/inventory/tickets"
	"github.com/ticketd/ticketd/inventory/tickets/qrtest"
)

var sample = tickets.Ticket{ID: "o01abc-001", EventID: "ev_summer", Admission: "Row A, Seat 12 · VIP"}

func TestSignVerifyRoundTrip(t *testing.T) {
	t.Parallel()
	k := tickets.NewKeys("secret one")
	text := k.Sign(sample)
	if !strings.HasPrefix(text, "TD1.") || strings.ContainsAny(text, "+/= ") {
		t.Fatalf("QR text %q is not the URL-safe TD1 form", text)
	}
	pub, err := tickets.ParsePublicKey(k.PublicKey(sample.EventID))
	if err != nil {
		t.Fatal(err)
	}
	got, err := tickets.Verify(text, pub)
	if err != nil || got != sample {
		t.Fatalf("Verify = %+v, %v; want %+v", got, err, sample)
	}
	// Another node (or ticketctl) with the same secrets key derives the same key.
	if tickets.NewKeys("secret one").PublicKey(sample.EventID) != k.PublicKey(sample.EventID) {
		t.Fatal("the same secrets key derived two public keys")
	}
	if got, err := tickets.Parse(text); err != nil || got != sample {
		t.Fatalf("Parse = %+v, %v", got, err)
	}
}

func TestVerifyRefusesTamperedFields(t *testing.T) {
	t.Parallel()
	k := tickets.NewKeys("secret one")
	text := k.Sign(sample)
	pub := k.VerifyKey(sample.EventID)
	parts := strings.Split(text, ".")
	for name, i := range map[string]int{"ticket id": 1, "event id": 2, "admission": 3} {
		forged := append([]string(nil), parts...)
		forged[i] = b64url(map[int]string{1: "o01abc-002", 2: "ev_other", 3: "Backstage"}[i])
		if _, err := tickets.Verify(strings.Join(forged, "."), pub); !errors.Is(err, tickets.ErrSignature) {
			t.Errorf("changed %s: err = %v, want ErrSignature", name, err)
		}
	}
	// A flipped signature byte.
	sig := []byte(parts[4])
	if sig[0] == 'A' {
		sig[0] = 'B'
	} else {
		sig[0] = 'A'
	}
	if _, err := tickets.Verify(strings.Join(append(parts[:4:4], string(sig)), "."), pub); !errors.Is(err, tickets.ErrSignature) {
		t.Errorf("changed signature: err = %v", err)
	}
	for _, junk := range []string{"", "hello", "TD2.a.b.c.d", "TD1.a.b.c", text + ".x", "TD1.!!.b.c." + parts[4]} {
		if _, err := tickets.Verify(junk, pub); err == nil || errors.Is(err, tickets.ErrSignature) {
			t.Errorf("Verify(%q) = %v, want a format error", junk, err)
		}
	}
	if _, err := tickets.Verify("TD2.a.b.c.d", pub); !errors.Is(err, tickets.ErrVersion) {
		t.Errorf("TD2: err = %v, want ErrVersion", err)
	}
}

func TestVerifyRefusesWrongKey(t *testing.T) {
	t.Parallel()
	k := tickets.NewKeys("secret one")
	text := k.Sign(sample)
	for name, pub := range map[string][]byte{
		"another event":      k.VerifyKey("ev_other"),
		"another deployment": tickets.NewKeys("secret two").VerifyKey(sample.EventID),
	} {
		if _, err := tickets.Verify(text, pub); !errors.Is(err, tickets.ErrSignature) {
			t.Errorf("%s: err = %v, want ErrSignature", name, err)
		}
	}
	if _, err := tickets.ParsePublicKey("not-a-key"); !errors.Is(err, tickets.ErrKey) {
		t.Errorf("ParsePublicKey: err = %v", err)
	}
}

func TestPageMAC(t *testing.T) {
	t.Parallel()
	k := tickets.NewKeys("secret one")
	m := k.PageMAC("o01abc")
	if !k.CheckPageMAC("o01abc", m) {
		t.Fatal("the page MAC of an order does not check")
	}
	if k.CheckPageMAC("o01abd", m) || k.CheckPageMAC("o01abc", "") || tickets.NewKeys("secret two").CheckPageMAC("o01abc", m) {
		t.Fatal("a page MAC checked for another order, empty, or another deployment")
	}
	if got, want := k.PageURL("https://t.example/", "o01abc"), "https://t.example/tickets/o01abc?k="+m; got != want {
		t.Fatalf("PageURL = %q, want %q", got, want)
	}
}

func TestPNGDecodesToTheSignedText(t *testing.T) {
	t.Parallel()
	k := tickets.NewKeys("secret one")
	text := k.Sign(sample)
	b, err := tickets.PNG(text, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := qrtest.Decode(t, b)
	if got != text {
		t.Fatalf("QR decodes to %q, want %q", got, text)
	}
	if _, err := tickets.Verify(got, k.VerifyKey(sample.EventID)); err != nil {
		t.Fatal(err)
	}
}

// The longest admission label a catalog allows (a ticket type or GA area
// name of catalog.MaxName four-byte characters), with the longest event id
// and ticket id, still signs into a QR text within MaxText that renders as
// a PNG a scanner reads back and verifies.
func TestLongestAdmissionRendersAndVerifies(t *testing.T) {
	t.Parallel()
	k := tickets.NewKeys("secret one")
	event := strings.Repeat("e", 64)
	tk := tickets.Ticket{ID: orders.NewOrderID(event) + "-" + strconv.Itoa(pricing.MaxQuantity), EventID: event,
		Admission: strings.Repeat("🎟", catalog.MaxName)}
	text := k.Sign(tk)
	if len(text) > tickets.MaxText {
		t.Fatalf("QR text of %d characters, Verify reads at most %d", len(text), tickets.MaxText)
	}
	b, err := tickets.PNG(text, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := qrtest.Decode(t, b)
	if v, err := tickets.Verify(got, k.VerifyKey(event)); err != nil || v != tk {
		t.Fatalf("Verify = %+v, %v; want %+v", v, err, tk)
	}
}

// Base64 decoders skip CR and LF; a code with one inside a field (or any
// byte outside the alphabet) is not the signed text and is refused.
func TestVerifyRefusesBytesOutsideTheAlphabet(t *testing.T) {
	t.Parallel()
	k := tickets.NewKeys("secret one")
	text := k.Sign(sample)
	sig := strings.LastIndexByte(text, '.') + 10
	for _, bad := range []string{
		text[:sig] + "\n" + text[sig:],
		text[:sig] + "\r\n" + text[sig:],
		text[:6] + "\n" + text[6:],
		text[:sig] + " " + text[sig:],
		text[:sig] + "=" + text[sig:],
	} {
		if _, err := tickets.Verify(bad, k.VerifyKey(sample.EventID)); !errors.Is(err, tickets.ErrMalformed) {
			t.Errorf("Verify(%q) = %v, want ErrMalformed", bad, err)
		}
	}
	// A scanner's trailing line break is still read.
	if _, err := tickets.Verify(text+"\r\n", k.VerifyKey(sample.EventID)); err != nil {
		t.Errorf("a trailing CRLF: %v", err)
	}
}

func b64url(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// The vector of docs/tickets.md: scanners and other implementations are
// written against it, so the format and the key derivation must not drift.
func TestDocumentedVector(t *testing.T) {
	t.Parallel()
	k := tickets.NewKeys("example")
	const pub = "XqvkwLZRYZnfiuH_EFGj68UuHENr-SBAOS6oAp2QDns"
	const text = "TD1.bzNrMmoxLmV2X3N1bW1lci0wMDE.ZXZfc3VtbWVy.R2VuZXJhbCBBZG1pc3Npb24." +
		"lMTsdSA-iZsSdbxz6_Wh5RJSRsNOje6iuM9Vd-6E-RoybgabuBgplVmhA14I92P-YgyJdpK5pUj60-Hqlk2bDA"
	tk := tickets.Ticket{ID: "o3k2j1.ev_summer-001", EventID: "ev_summer", Admission: "General Admission"}
	if got := k.PublicKey("ev_summer"); got != pub {
		t.Errorf("public key %s, documented %s", got, pub)
	}
	if got := k.Sign(tk); got != text {
		t.Errorf("QR text %s, documented %s", got, text)
	}
	if got := k.PageMAC("o3k2j1.ev_summer"); got != "chOnqCfKLu83qUS0HA9-lA" {
		t.Errorf("page MAC %s, documented chOnqCfKLu83qUS0HA9-lA", got)
	}
}
