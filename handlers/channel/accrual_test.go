package channel

import (
	"net"
	"strings"
	"testing"

	"github.com/fasthttp/router"
	"github.com/redis/rueidis"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/clientip"
	"github.com/ticketd/ticketd/handlers/ratelimit"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/redistest"
)

// TestConfirmRedisFailureIsRetryable: when Redis fails on the confirm path
// the partner gets 503 ACCRUAL_FAILED_RETRY (retry is safe), never a 500
// nor another code: at the confirm script, and at the rate limit before it
// (Redis went away and the state monitor has not noticed yet, so the gate
// still lets the request in).
func TestConfirmRedisFailureIsRetryable(t *testing.T) {
	rc, space := redistest.New(t)
	// A single client: a Redis Cluster client closes its connections in the
	// background, so a command right after Close could still succeed.
	broken, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{strings.TrimPrefix(redistest.URL(), "redis://")},
		DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	broken.Close() // every command now fails

	sealer := catalog.NewSealer("k")
	ch := sealer.Store(catalog.Channel{ID: "ch", Key: "ck", Secret: "cs_secret_1", SigningKey: "sk",
		Scopes: []string{catalog.ScopeOrdersConfirm}, IPAllowlist: []string{"127.0.0.1/32"}, Settlement: catalog.SettlementPartnerRemit})
	snap, err := catalog.Compile(1, nil, []catalog.StoredChannel{ch}, sealer)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name            string
		orders, limiter rueidis.Client
	}{
		{"confirm script", broken, rc},
		{"rate limit", broken, broken},
	} {
		api := &API{
			Catalog:  func() *catalog.Snapshot { return snap },
			Orders:   &orders.Service{Redis: tc.orders, Space: space},
			Limiter:  &ratelimit.Limiter{Redis: tc.limiter, Space: space},
			ClientIP: &clientip.Resolver{},
			Sessions: &Sessions{Secret: []byte("s")},
			Logger:   discardLogger(),
		}
		r := router.New()
		api.Register(r)

		var ctx fasthttp.RequestCtx
		ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4000}, nil)
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI("/v1/channel/orders/confirm")
		ctx.Request.Header.Set("x-service-key", "ck")
		ctx.Request.Header.Set("x-service-secret", "cs_secret_1")
		ctx.Request.Header.Set("x-service-signature", Signature("sk", "oabc.ev_ga", money.Cents(1000), "ref"))
		ctx.Request.SetBodyString(`{"orderId":"oabc.ev_ga","amount":10,"partnerReference":"ref"}`)
		r.Handler(&ctx)
		if ctx.Response.StatusCode() != 503 || !strings.Contains(string(ctx.Response.Body()), `"code":"ACCRUAL_FAILED_RETRY"`) {
			t.Errorf("Redis failing at the %s: got %d %s", tc.name, ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
}
