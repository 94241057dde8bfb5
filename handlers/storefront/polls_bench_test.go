package storefront_test

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/roundtrips"
)

// benchClients is how many client addresses the pollers share
// (X-Forwarded-For from the trusted loopback): each keeps within the read
// limit the node counts far polls in, so no poll is refused.
const benchClients = 16_384

// pollBench is a server whose room sf_room (2 tickets) has 400 buyers,
// and the poll tokens of its places 250 to 399: at least 247 behind the
// head, far at the room's default NearHead (200), so answered from the
// node's memory once its tick has read the line.
func pollBench(b *testing.B) (*servertest.Server, []string) {
	b.Helper()
	s := servertest.Start(b, servertest.Options{Trusted: "127.0.0.1/32"})
	s.Apply(b, []byte(roomCatalog()))
	var tokens []string
	for i := range 400 {
		h := servertest.Shop()
		h["X-Forwarded-For"] = fmt.Sprintf("198.18.%d.%d", i/250, i%250+1)
		r := s.Do(b, "POST", "/v1/storefront/queue/sf_room/join", h, map[string]any{"email": fmt.Sprintf("b%d@example.com", i)})
		if r.Status != 200 {
			b.Fatalf("join %d: %s", i, r)
		}
		var p place
		r.Decode(b, &p)
		if i >= 250 {
			tokens = append(tokens, p.PollToken)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		h := bearer(tokens[0])
		h[servertest.TripsHeader] = "1"
		if r := s.Do(b, "GET", "/v1/storefront/queue/sf_room/status", h, nil); r.Status == 200 && r.Header.Get(servertest.TripsCount) == "0" {
			return s, tokens
		}
		if time.Now().After(deadline) {
			b.Fatal("no far poll answered from memory within 10 s")
		}
	}
}

// redisCalls is the Redis server's command count so far (INFO
// commandstats, every client's: other users of the server count too).
func redisCalls(b *testing.B, s *servertest.Server) int64 {
	info, err := s.Redis.Do(b.Context(), s.Redis.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(info, "\r\n") {
		_, stats, ok := strings.Cut(line, ":calls=")
		if !ok {
			continue
		}
		v, _, _ := strings.Cut(stats, ",")
		c, _ := strconv.ParseInt(v, 10, 64)
		n += c
	}
	return n
}

// BenchmarkFarPolls measures status polls of waiters far from the head,
// over loopback HTTP from 64 concurrent pollers, each request counting its
// Redis round trips: polls/s is the rate the node answers them at (the
// client shares the machine), trips/op the round trips the polls made
// (0: answered from memory), cpu-us/op this process's CPU a poll (the
// client's and the server's), stack-trips/op everything the server made
// meanwhile (its admission ticks and state checks included) and
// redis-cmds/op the Redis server's commands meanwhile (INFO commandstats,
// every client's on a shared server).
//
//	go test -run '^$' -bench FarPolls -benchtime 5s ./handlers/storefront/
func BenchmarkFarPolls(b *testing.B) {
	s, tokens := pollBench(b)
	stack := s.Redis.(*roundtrips.Client)
	// The client's side made ready beforehand: it shares the machine.
	ips := make([]string, benchClients)
	for i := range ips {
		ips[i] = fmt.Sprintf("10.%d.%d.1", i>>8, i&255)
	}
	auth := make([]string, len(tokens))
	for i, tok := range tokens {
		auth[i] = "Bearer " + tok
	}
	url := s.URL + "/v1/storefront/queue/sf_room/status"
	var seq, trips, failed atomic.Int64
	b.SetParallelism(32) // per GOMAXPROCS: 64 pollers on 2 cores
	calls0, stack0, cpu0 := redisCalls(b, s), stack.Total(), processCPU()
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		for pb.Next() {
			i := seq.Add(1)
			req.Reset()
			req.SetRequestURI(url)
			req.Header.Set("x-service-key", "pk_shop")
			req.Header.Set("Origin", servertest.ShopOrigin)
			req.Header.Set("Authorization", auth[i%int64(len(auth))])
			req.Header.Set("X-Forwarded-For", ips[i%benchClients])
			req.Header.Set(servertest.TripsHeader, "1")
			if err := s.Client.Do(req, resp); err != nil || resp.StatusCode() != 200 {
				failed.Add(1)
				continue
			}
			n, _ := strconv.ParseInt(string(resp.Header.Peek(servertest.TripsCount)), 10, 64)
			trips.Add(n)
		}
	})
	b.StopTimer()
	took := time.Since(start)
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d polls failed or were refused", n, b.N)
	}
	b.ReportMetric(float64(b.N)/took.Seconds(), "polls/s")
	b.ReportMetric((processCPU()-cpu0).Seconds()*1e6/float64(b.N), "cpu-us/op")
	b.ReportMetric(float64(trips.Load())/float64(b.N), "trips/op")
	b.ReportMetric(float64(stack.Total()-stack0)/float64(b.N), "stack-trips/op")
	b.ReportMetric(float64(redisCalls(b, s)-calls0)/float64(b.N), "redis-cmds/op")
}

// BenchmarkFarPollsHandler is BenchmarkFarPolls through the root handler
// without the network: the node's own cost of a far poll (the gate, the
// poll token, the frontier, the local limit, the answer), cpu-us/op.
//
//	go test -run '^$' -bench FarPollsHandler -benchmem ./handlers/storefront/
func BenchmarkFarPollsHandler(b *testing.B) {
	s, tokens := pollBench(b)
	// The client addresses are the connections' own (no proxy here).
	addrs := make([]net.Addr, benchClients)
	for i := range addrs {
		addrs[i] = &net.TCPAddr{IP: net.IPv4(10, byte(i>>8), byte(i), 1), Port: 40000}
	}
	auth := make([]string, len(tokens))
	for i, tok := range tokens {
		auth[i] = "Bearer " + tok
	}
	var seq atomic.Int64
	stack := s.Redis.(*roundtrips.Client)
	stack0, start, cpu0 := stack.Total(), time.Now(), processCPU()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var ctx fasthttp.RequestCtx
		for pb.Next() {
			i := seq.Add(1)
			ctx.Request.Reset()
			ctx.Response.Reset()
			ctx.Request.SetRequestURI("/v1/storefront/queue/sf_room/status")
			ctx.Request.Header.Set("x-service-key", "pk_shop")
			ctx.Request.Header.Set("Origin", servertest.ShopOrigin)
			ctx.Request.Header.Set("Authorization", auth[i%int64(len(auth))])
			ctx.SetRemoteAddr(addrs[i%benchClients])
			s.Handler(&ctx)
			if ctx.Response.StatusCode() != 200 {
				b.Fatalf("poll: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "polls/s")
	b.ReportMetric((processCPU()-cpu0).Seconds()*1e6/float64(b.N), "cpu-us/op")
	b.ReportMetric(float64(stack.Total()-stack0)/float64(b.N), "stack-trips/op")
}

// processCPU is this process's CPU time so far: on a shared machine the
// CPU a poll costs says more than the rate, which the other users bound.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
