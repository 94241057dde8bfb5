package webhooks_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/router"

	"github.com/ticketd/ticketd/handlers/server"
	"github.com/ticketd/ticketd/handlers/webhooks"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/payments"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/inventory/registrations"
)

type surface struct{ api *webhooks.API }

func (s surface) Register(r *router.Router) { s.api.Register(r) }

// The built-in processors' webhooks, sent over HTTP to ticketd's own
// server, are verified and booked: what the processor signs and sends is
// what the handler accepts.
func TestTestProcessorsWebhooksAreBookedOverHTTP(t *testing.T) {
	rc, space := redistest.New(t)
	booker := &fakeBooker{paid: map[string]registrations.Payment{}, total: 4250}
	api := &webhooks.API{Booker: booker, Refunds: &fakeRefunds{}, Redis: rc, Space: space,
		CardSecret: cardSecret, WalletSecret: walletSecret}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Handler(nil, surface{api}))
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown() })

	ps, err := payments.Open(payments.Config{
		CardProcessor: payments.Card, WalletProcessor: payments.Wallet, TestPayments: true,
		Hosted:     payments.HostedConfig{Redis: rc, Space: space, AppURL: "http://" + ln.Addr().String()},
		CardSecret: cardSecret, WalletSecret: walletSecret,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, h := range []*payments.Hosted{ps.TestCard, ps.TestWallet} {
		reg := keys.OrderID("ev_jazz", "flow"+h.Name())
		sess, err := h.CreateSession(ctx, payments.CheckoutRequest{RegistrationID: reg, EventName: "Jazz", Amount: 4250,
			SuccessURL: "https://host.example/ok", CancelURL: "https://host.example/no", ExpiresAt: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := h.Pay(ctx, sess.ID, "4242424242424242"); err != nil {
			t.Fatal(err)
		}
		got := booker.payments()
		want := registrations.Payment{RegistrationID: reg, Processor: h.Name(), PaymentID: sess.ID, Amount: 4250, Currency: "usd"}
		if h.Name() == payments.Wallet {
			want.Currency = "USD"
		}
		if len(got) != i+1 || got[i] != want {
			t.Fatalf("%s: booked %+v, want %+v", h.Name(), got, want)
		}
		owed, err := rc.Do(ctx, rc.B().Zcard().Key(space.PayDue(keys.Partition("ev_jazz"), h.Name())).Build()).AsInt64()
		if err != nil || owed != 0 {
			t.Fatalf("%s: %d deliveries still owed after ticketd accepted (%v)", h.Name(), owed, err)
		}
	}
	if ps.Set[payments.Card] == nil || ps.Set[payments.Wallet] == nil {
		t.Fatalf("set %v", ps.Set)
	}

	// Bodies beyond 64 KB are refused before any handler reads them: the
	// answer comes from the headers alone, with none of the body sent (a
	// client still writing a body the server refused unread may see its
	// write fail before it reads the answer, so none is written).
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "POST /v1/webhooks/card HTTP/1.1\r\nHost: ticketd\r\nContent-Type: application/json\r\n"+
		"Content-Length: 71700\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("70 KB webhook: no answer before its body was sent: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 413 || !strings.Contains(string(b), "PAYLOAD_TOO_LARGE") {
		t.Fatalf("70 KB webhook: %d %s", resp.StatusCode, b)
	}
}
