// Package servertest starts the whole ticketd HTTP stack in process for
// tests: real Redis (own key space), real Postgres (own database), the
// catalog store, the partner and admin surfaces on a loopback listener, and a
// sync worker tests drain on demand. Every answer it gives is checked
// against the OpenAPI document (openapi.go).
package servertest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/app"
	"github.com/ticketd/ticketd/handlers/channel"
	"github.com/ticketd/ticketd/handlers/clientip"
	"github.com/ticketd/ticketd/handlers/metrics"
	"github.com/ticketd/ticketd/handlers/server"
	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/catalogstore"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/payments"
	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/inventory/registrations"
	"github.com/ticketd/ticketd/inventory/roundtrips"
	"github.com/ticketd/ticketd/inventory/tickets"
	"github.com/ticketd/ticketd/sync/catalogdb"
	"github.com/ticketd/ticketd/sync/pgtest"
	"github.com/ticketd/ticketd/sync/rebuild"
	"github.com/ticketd/ticketd/sync/worker"
)

// AdminToken is the admin bearer token of every test server.
const AdminToken = "test-admin-token"

// Options tune a test server.
type Options struct {
	OrderTTL    time.Duration
	SeatHoldTTL time.Duration
	// Trusted proxies (CIDRs) whose X-Forwarded-For is believed.
	Trusted string
	// CheckoutTTL is the storefront checkout window (TICKETD_CHECKOUT_TTL).
	CheckoutTTL time.Duration
	// RegisterHoldTTL is how long a registration holds until its payment
	// is opened (TICKETD_REGISTER_HOLD_TTL; 0: the default, at most
	// CheckoutTTL).
	RegisterHoldTTL time.Duration
	// HoldsPerIP bounds the unpaid registrations and hold tokens of a
	// client IP per event (TICKETD_HOLDS_PER_IP); 0, unlike ticketd's
	// default of 8, counts none: most tests act as many buyers from one
	// address.
	HoldsPerIP int64
	// ManualRecovery leaves a lost Redis state to the test (Rebuilder.Run),
	// as TICKETD_RECOVERY=manual does.
	ManualRecovery bool
	// LockoutPerIP and LockoutPerKey are the failed authentications a
	// minute the lockout allows (0: its defaults). Low figures make a lock
	// outlast a test's requests however slow the machine.
	LockoutPerIP, LockoutPerKey int64
	// StorefrontCard, when set, is the card processor the storefront's
	// payment calls use, given the built-in test card (to wrap it); the
	// sweep and the hosted page keep the test card itself.
	StorefrontCard func(*payments.Hosted) payments.Processor
	// StorefrontTimeout bounds each storefront request's work (0: the
	// surface's default).
	StorefrontTimeout time.Duration
	// Retention is how long orders, registrations and Idempotency-Keys
	// outlive their end in Redis (0: the 24 h default); a short one lets
	// a test see every key it made go.
	Retention time.Duration
	// RoomNearHead is how many places at the head of a waiting room's
	// line each tick lists for the polls (0: the room's default, 200);
	// the places farther back are placed by the line's sampled scores.
	RoomNearHead int64
	// StripeWebhookSecret, when set, has POST /v1/webhooks/stripe verify
	// Stripe's events with it (STRIPE_WEBHOOK_SECRET); unset, each is
	// refused.
	StripeWebhookSecret string
}

// Server is a running test stack.
type Server struct {
	URL   string
	Redis rueidis.Client
	Space keys.Space
	Pool  *pgxpool.Pool
	// DatabaseURL is the test database\'s URL, for code that connects by itself.
	DatabaseURL string
	Catalog     *catalogstore.Store
	// Monitor checks the Redis state every 50 ms and keeps the gate;
	// Rebuilder restores it from Postgres (by itself unless ManualRecovery).
	Monitor   *redisstate.Monitor
	Rebuilder *rebuild.Rebuilder
	Worker    *worker.Worker
	Sessions  *channel.Sessions
	// Registrations is the storefront's registration service; Card and
	// Wallet are the built-in test processors (their Pay is what the
	// hosted page's Pay button does); Tickets signs the tickets.
	Registrations *registrations.Service
	Card, Wallet  *payments.Hosted
	Tickets       *tickets.Keys
	Client        *fasthttp.Client
	// Metrics is the server's metric set (also served at /metrics).
	Metrics *metrics.Metrics
	// Handler is the root handler, for benchmarks that skip the network.
	Handler fasthttp.RequestHandler
	// Routes are the routes the server serves: method -> path templates.
	Routes map[string][]string
}

// Start builds the stack and stops it with t.
func Start(t testing.TB, opt Options) *Server {
	t.Helper()
	raw, space := redistest.New(t)
	// Every Redis call of the stack is counted: a request sent with
	// TripsHeader answers how many round trips it made (Server.Trips).
	rc := roundtrips.Wrap(raw, nil)
	pool := pgtest.New(t)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	store := &catalogstore.Store{Redis: rc, Space: space, Sealer: catalog.NewSealer("test"), Record: &catalogdb.Store{Pool: pool}, Logger: log}
	ctx := context.Background()
	if err := store.Refresh(ctx); err != nil {
		t.Fatalf("servertest: bootstrap: %v", err)
	}
	m := metrics.New()
	base := app.Base{Redis: rc, Space: space, Pool: pool, Catalog: store, Metrics: m, Logger: log}
	st := app.NewState(base, nil)
	mon, rb := st.Monitor, st.Rebuilder
	// One node: the rebuild reads its own book, no other node's marks
	// need a wait.
	rb.FlushWait = -1
	if !opt.ManualRecovery {
		mon.Recover = rb.Recoverer(m.RebuildDone)
	}
	if v := mon.Check(ctx); v.Status != redisstate.Current {
		t.Fatalf("servertest: Redis state is %s: %s", v.Status, v.Reason)
	}
	monCtx, stopMon := context.WithCancel(context.Background())
	t.Cleanup(stopMon)
	go mon.Run(monCtx, 50*time.Millisecond)
	go st.Guard.Book.Run(monCtx)
	trusted, err := clientip.ParsePrefixes(opt.Trusted)
	if err != nil {
		t.Fatalf("servertest: %v", err)
	}
	// The listener comes first: the payment processors' pages and
	// webhooks need the server's URL.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("servertest: listen: %v", err)
	}
	url := "http://" + ln.Addr().String()
	set := settings(opt, url, trusted)
	node, err := app.New(base, st, set)
	if err != nil {
		t.Fatalf("servertest: %v", err)
	}
	// The backlog reader and the sweeper of expired checkout holds run
	// as on every node; the test processors' webhooks are delivered on
	// demand (Card.DeliverDue), not by a loop.
	for _, loop := range node.Loops {
		go loop(monCtx)
	}
	handler := node.Handler
	// Every answer is checked against the OpenAPI document (openapi.go);
	// its cleanup, registered first, runs after the server stopped.
	v := newValidator(t)
	srv := server.New(countTrips(v.wrap(handler)), server.AdminToken(AdminToken), server.Logger(log))
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		node.Stopping()
		_ = srv.Shutdown()
	})
	w := app.NewWorker(base, set)
	if err := w.EnsureGroups(ctx); err != nil {
		t.Fatalf("servertest: worker groups: %v", err)
	}
	return &Server{
		URL: url, Redis: rc, Space: space, Pool: pool, DatabaseURL: pgtest.URLOf(t, pool), Catalog: store,
		Monitor: mon, Rebuilder: rb, Worker: w, Sessions: node.Sessions, Registrations: node.Registrations, Handler: handler, Routes: node.Routes,
		Metrics: m, Card: node.Card, Wallet: node.Wallet, Tickets: node.Tickets,
		Client: &fasthttp.Client{MaxConnsPerHost: 2048, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second},
	}
}

// Response is a decoded envelope.
type Response struct {
	Status  int             `json:"-"`
	Header  http.Header     `json:"-"`
	Body    []byte          `json:"-"`
	Success bool            `json:"success"`
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Reason  string          `json:"reason"`
	Data    json.RawMessage `json:"data"`
	Raw     map[string]any  `json:"-"`
}

// Do sends a request; body may be nil, a []byte or any value to JSON-encode.
func (s *Server) Do(t testing.TB, method, path string, headers map[string]string, body any) *Response {
	t.Helper()
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(method)
	req.SetRequestURI(s.URL + path)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	switch b := body.(type) {
	case nil:
	case []byte:
		req.SetBody(b)
	case string:
		req.SetBodyString(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("servertest: encode: %v", err)
		}
		req.SetBody(enc)
	}
	if body != nil {
		req.Header.SetContentType("application/json")
	}
	if err := s.Client.Do(req, resp); err != nil {
		t.Errorf("servertest: %s %s: %v", method, path, err)
		return &Response{Status: 0}
	}
	r := &Response{Status: resp.StatusCode(), Body: append([]byte(nil), resp.Body()...), Header: http.Header{}}
	for k, v := range resp.Header.All() {
		r.Header.Add(string(k), string(v))
	}
	if r.Status == fasthttp.StatusNoContent && len(r.Body) == 0 {
		return r // a CORS preflight's answer has no body
	}
	if err := json.Unmarshal(r.Body, r); err != nil {
		t.Errorf("servertest: %s %s: response is not JSON (%d): %q", method, path, r.Status, r.Body)
	}
	_ = json.Unmarshal(r.Body, &r.Raw)
	return r
}

// Decode decodes the envelope's data into v.
func (r *Response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Data, v); err != nil {
		t.Fatalf("servertest: decode data %s: %v", r.Data, err)
	}
}

// String summarises the response for failure messages.
func (r *Response) String() string { return fmt.Sprintf("%d %s", r.Status, bytes.TrimSpace(r.Body)) }

// Apply PUTs a catalog document (any JSON-encodable value) and fails the test
// unless it is accepted.
func (s *Server) Apply(t testing.TB, doc any) {
	t.Helper()
	r := s.Do(t, "PUT", "/v1/admin/catalog", map[string]string{"Authorization": "Bearer " + AdminToken}, doc)
	if r.Status != 200 {
		t.Fatalf("servertest: apply catalog: %s", r)
	}
}

// Drain runs the sync worker until the paid streams are empty.
func (s *Server) Drain(t testing.TB) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n, err := s.Worker.DrainOnce(ctx)
	if err != nil {
		t.Fatalf("servertest: drain: %v", err)
	}
	return n
}

// Count runs a counting query on the test database.
func (s *Server) Count(t testing.TB, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := s.Pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("servertest: %s: %v", sql, err)
	}
	return n
}

// TripsHeader, on a request to a test server, asks for the Redis round
// trips the request made; the answer carries the count in TripsCount.
const (
	TripsHeader = "X-Test-Roundtrips"
	TripsCount  = "X-Test-Roundtrips-Count"
)

// countTrips counts the round trips of the requests that ask (TripsHeader)
// through the request context the surfaces make (guard.RequestContext).
func countTrips(h fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if len(ctx.Request.Header.Peek(TripsHeader)) == 0 {
			h(ctx)
			return
		}
		c := &roundtrips.Counter{}
		ctx.SetUserValue(roundtrips.RequestKey, c)
		h(ctx)
		ctx.Response.Header.Set(TripsCount, strconv.FormatInt(c.Load(), 10))
	}
}
