package scenario

import (
	"bytes"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/inventory/catalog"
)

// TestWebhookSignatureMatchesOpenssl: the bench plays the card processor,
// so its Payment-Signature must be the HMAC-SHA256 any other tool computes
// over "<t>.<raw body>", or ticketd would refuse every payment.
func TestWebhookSignatureMatchesOpenssl(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl not installed")
	}
	b := newBuyer(&shop{secret: "whsec_bench_0123"}, 3)
	for _, body := range []string{`{"id":"evt_1","type":"checkout.session.completed"}`, `{}`, "with\nnewline and ünïcode"} {
		ts := int64(1764000000)
		got := strings.TrimPrefix(string(b.signature([]byte("x"), ts, []byte(body))), "x")
		msg := strconv.FormatInt(ts, 10) + "." + body
		cmd := exec.Command(openssl, "dgst", "-sha256", "-hmac", "whsec_bench_0123")
		cmd.Stdin = strings.NewReader(msg)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		// "SHA2-256(stdin)= <hex>" or "(stdin)= <hex>", by openssl version.
		fields := strings.Fields(string(out))
		want := "t=" + strconv.FormatInt(ts, 10) + ",v1=" + fields[len(fields)-1]
		if got != want {
			t.Errorf("signature of %q = %s, openssl says %s", body, got, want)
		}
	}
	// A reused buyer signs the next body afresh, not on top of the last.
	first := string(b.signature(nil, 1, []byte("a")))
	b.signature(nil, 2, []byte("b"))
	if again := string(b.signature(nil, 1, []byte("a"))); again != first {
		t.Fatalf("signing depends on the previous body: %s then %s", first, again)
	}
}

// decode parses a request body the bench sends into a generic map, failing
// the test when it is not JSON.
func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatalf("not JSON: %s: %v", b, err)
	}
	return m
}

// TestStorefrontBodiesFollowTheContract: register-guest, the checkout
// session and the webhook carry the fields of interface.md and
// decisions.md section 4, with amounts as JSON numbers.
func TestStorefrontBodiesFollowTheContract(t *testing.T) {
	s := &shop{successURL: "https://a.example/thanks?session={CHECKOUT_SESSION_ID}", cancelURL: "https://a.example/no", evtPrefix: "evt_r_"}
	b := newBuyer(s, 7)
	b.next()
	b.reg = []byte("oabc123.ev_r_sflash")
	b.session = []byte("cs_9f8e")
	b.amount = ticketPrice + ticketFee
	ga := []byte(`"selectedTicketId":"tk_ga","quantity":1`)

	reg := decode(t, b.registerBody(nil, "ev_r_sflash", ga))
	if reg["eventId"] != "ev_r_sflash" || reg["name"] != "Bench Buyer" || reg["selectedTicketId"] != "tk_ga" ||
		reg["quantity"] != json.Number("1") || !strings.HasSuffix(reg["email"].(string), "@bench.example.com") {
		t.Fatalf("register-guest body %v", reg)
	}
	co := decode(t, b.checkoutBody(nil, "ev_r_sflash", ga, ticketPrice))
	if co["registrationId"] != "oabc123.ev_r_sflash" || co["selectedTicketAmount"] != json.Number("25.00") ||
		co["successUrl"] != s.successURL || co["cancelUrl"] != s.cancelURL || co["quantity"] != json.Number("1") {
		t.Fatalf("checkout body %v", co)
	}

	p := newSeatPicker(1, 10, 20)
	p.pick()
	cart := append(p.appendLabels([]byte(`"seatLabels":`)), `,"seatHoldToken":"ht_1"`...)
	seats := decode(t, b.registerBody(nil, "ev_s", cart))
	labels, _ := seats["seatLabels"].([]any)
	if len(labels) != 2 || labels[0] != p.labels[0] || labels[1] != p.labels[1] || seats["seatHoldToken"] != "ht_1" {
		t.Fatalf("seated register-guest body %v", seats)
	}
	if _, ok := seats["selectedTicketId"]; ok {
		t.Fatalf("a seated registration names a ticket: %v", seats)
	}

	hook := decode(t, b.webhookBody(nil, []byte("evt_r_7_1")))
	obj := hook["data"].(map[string]any)["object"].(map[string]any)
	if hook["id"] != "evt_r_7_1" || hook["type"] != "checkout.session.completed" || obj["id"] != "cs_9f8e" ||
		obj["payment_status"] != "paid" || obj["amount_total"] != json.Number("2650") || obj["currency"] != "usd" ||
		obj["client_reference_id"] != "oabc123.ev_r_sflash" {
		t.Fatalf("webhook body %v", hook)
	}
}

func TestSessionIDIsTheLastPathSegment(t *testing.T) {
	for in, want := range map[string]string{
		"http://localhost:8080/pay/card/cs_abc":       "cs_abc",
		"https://pay.example/pay/card/cs_abc?x=1#top": "cs_abc",
		`http:\/\/h\/pay\/card\/cs_abc`:               "cs_abc", // a JSON encoder escaping slashes
		"http://h/pay/card/":                          "",
		"":                                            "",
		`http://h/pay/card/a"b`:                       "",
	} {
		if got := string(sessionID([]byte(in))); got != want {
			t.Errorf("sessionID(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestEveryBuyerHasItsOwnAddress: the per-IP limits must see each buyer
// alone, and ticketd must parse what X-Forwarded-For carries.
func TestEveryBuyerHasItsOwnAddress(t *testing.T) {
	seen := map[netip.Addr]bool{}
	b := newBuyer(&shop{}, 0)
	for range 1000 {
		b.next()
		a, err := netip.ParseAddr(string(b.ip))
		if err != nil || !netip.MustParsePrefix("10.0.0.0/8").Contains(a) || seen[a] {
			t.Fatalf("buyer address %q: %v, seen before %v", b.ip, err, seen[a])
		}
		seen[a] = true
	}
	if got := string(appendBuyerIP(nil, 0x01_02_03)); got != "10.1.2.3" {
		t.Fatalf("appendBuyerIP(0x010203) = %s", got)
	}
}

// TestStorefrontCatalogIsValid: the storefront scenarios provision a
// document ticketd accepts, their events switched on for the storefront
// and the shop's Origin host on its key's domain list.
func TestStorefrontCatalogIsValid(t *testing.T) {
	env := &Env{Run: "bq1w2e3r4", CardWebhookSecret: "whsec_x"}
	b := &docBuilder{}
	f, s := &storefrontFlash{capacity: 100}, &storefrontSeats{rows: 3, seats: 4}
	f.provision(env, b)
	s.provision(env, b)
	doc := b.doc(env.Run)
	if err := catalog.Validate(doc); err != nil {
		t.Fatal(err)
	}
	ten := doc.Tenants[0]
	if len(ten.PublishableKeys) != 2 || len(ten.Events) != 2 {
		t.Fatalf("keys %+v, events %d", ten.PublishableKeys, len(ten.Events))
	}
	for _, ev := range ten.Events {
		if !ev.Storefront {
			t.Errorf("event %s not on the storefront", ev.ID)
		}
	}
	for _, sh := range []*shop{f.shop, s.shop} {
		if sh.origin != "https://"+sh.doc().Domains[0] || !sh.doc().Enabled {
			t.Errorf("shop %s: origin %s, key %+v", sh.key, sh.origin, sh.doc())
		}
	}
	if f.shop.key == s.shop.key || f.shop.evtPrefix == s.shop.evtPrefix {
		t.Fatalf("the two shops share a key or webhook ids: %s %s", f.shop.key, s.shop.key)
	}
}
