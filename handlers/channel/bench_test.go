package channel_test

import (
	"bytes"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/channel"
	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/money"
)

// BenchmarkReserveConfirm runs the partner hot path, reserve then signed
// confirm, through the root handler without the network: the CPU and
// allocations ticketd itself spends on a pair, Redis round trips included.
//
//	go test -run '^$' -bench ReserveConfirm -benchmem ./handlers/channel/
//
// TEST_REDIS_FLUSH_DELAY (e.g. 20us) sets the Redis client's flush delay
// as TICKETD_REDIS_FLUSH_DELAY does for ticketd.
func BenchmarkReserveConfirm(b *testing.B) {
	s := servertest.Start(b, servertest.Options{})
	s.Apply(b, []byte(benchCatalog))
	var seq atomic.Int64
	body := []byte(`{"buyerName":"Load","buyerEmail":"load@example.com","selectedTicketId":"tk"}`)
	b.ReportAllocs()
	b.SetParallelism(32) // concurrent buyers, so Redis calls pipeline as in production
	cpu0, own0 := redisCPU(b, s), processCPU()
	b.ResetTimer()
	defer func() {
		b.StopTimer()
		// CPU per pair, which wall time on a busy machine hides: this
		// process (ticketd's side) and the Redis server (whole server, so
		// other clients count too).
		b.ReportMetric((processCPU()-own0)*1e6/float64(b.N), "cpu-us/op")
		b.ReportMetric((redisCPU(b, s)-cpu0)*1e6/float64(b.N), "redis-us/op")
	}()
	b.RunParallel(func(pb *testing.PB) {
		var ctx fasthttp.RequestCtx
		for pb.Next() {
			benchPost(&ctx, "/v1/channel/events/ev_bench/checkout")
			ctx.Request.Header.Set("Idempotency-Key", "b-"+strconv.FormatInt(seq.Add(1), 10))
			ctx.Request.SetBody(body)
			s.Handler(&ctx)
			if ctx.Response.StatusCode() != 200 {
				b.Fatalf("reserve: %s", ctx.Response.Body())
			}
			order, amount := field(ctx.Response.Body(), "orderId"), field(ctx.Response.Body(), "amount")
			cents, _ := money.Parse(amount)
			benchPost(&ctx, "/v1/channel/orders/confirm")
			ctx.Request.Header.Set("x-service-signature", channel.Signature("sk_bench", order, cents, "p"))
			ctx.Request.SetBodyString(`{"orderId":"` + order + `","amount":` + amount + `,"partnerReference":"p"}`)
			s.Handler(&ctx)
			if ctx.Response.StatusCode() != 200 {
				b.Fatalf("confirm: %s", ctx.Response.Body())
			}
		}
	})
}

// benchPost readies ctx for a keyed POST to uri by the bench channel.
func benchPost(ctx *fasthttp.RequestCtx, uri string) {
	ctx.Request.Reset()
	ctx.Response.Reset()
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI(uri)
	ctx.Request.Header.Set("x-service-key", "ck_bench")
	ctx.Request.Header.Set("x-service-secret", "cs_bench_secret")
}

// redisCPU is the Redis server's CPU time so far, in seconds.
func redisCPU(b *testing.B, s *servertest.Server) float64 {
	info, err := s.Redis.Do(b.Context(), s.Redis.B().Info().Section("cpu").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	total := 0.0
	for _, line := range strings.Split(info, "\r\n") {
		k, v, _ := strings.Cut(line, ":")
		if k == "used_cpu_sys" || k == "used_cpu_user" {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return total
}

// processCPU is this process's CPU time so far, in seconds.
func processCPU() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// field is the raw value of a top-level-ish JSON field, quotes stripped.
func field(body []byte, name string) string {
	i := bytes.Index(body, []byte(`"`+name+`":`))
	if i < 0 {
		return ""
	}
	v := body[i+len(name)+3:]
	end := bytes.IndexAny(v, ",}")
	return string(bytes.Trim(v[:end], `"`))
}

const benchCatalog = `{
 "tenants": [{"id": "t_bench", "name": "Bench", "notifyEmail": "", "publishableKeys": [],
  "events": [{"id": "ev_bench", "shortId": "bench", "slug": "bench", "name": "Bench", "startsAt": "2030-01-01T00:00:00Z",
   "status": "on_sale", "storefront": false, "channels": ["ch_bench"],
   "pricing": {"feePerTicket": 1.5},
   "tickets": [{"id": "tk", "name": "T", "price": 25, "capacity": 100000000}]}]}],
 "channels": [{"id": "ch_bench", "name": "Bench", "key": "ck_bench", "secret": "cs_bench_secret", "signingKey": "sk_bench",
  "scopes": ["catalog:read", "orders:write", "orders:confirm", "orders:read", "sessions:write"],
  "ipAllowlist": ["0.0.0.0/0", "::/0"], "settlement": "partner_remit",
  "rateLimits": {"checkout": 100000000, "confirm": 100000000}}]}`
