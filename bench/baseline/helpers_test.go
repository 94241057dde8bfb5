package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/ticketd/ticketd/bench/procs"
	ticketd "github.com/ticketd/ticketd/handlers/channel"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/sync/pgtest"
)

// testDB creates a database baseline_test_<random> on sync/pgtest's server
// (procs.CreateDatabase, as the bench makes its own) and returns a pool of
// size conns on it; the database is dropped when t ends.
func testDB(t *testing.T, size int) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url, drop, err := procs.CreateDatabase(ctx, pgtest.URL(), "baseline_test_")
	if err != nil {
		t.Fatalf("%v (run `make services`)", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := drop(ctx); err != nil {
			t.Errorf("drop %s: %v", url, err)
		}
	})
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = int32(size)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	t.Cleanup(pool.Close) // before the drop: cleanups run last-in first-out
	return pool
}

// testServer is a baseline served on an in-memory listener.
type testServer struct {
	app    *app
	pool   *pgxpool.Pool
	client *fasthttp.Client
}

// start serves a fresh database with a pool of conns connections. Tests run
// in parallel, so they keep their pools small: the Postgres server's
// max_connections is shared with every other package's tests.
func start(t *testing.T, conns int) *testServer {
	t.Helper()
	t.Parallel()
	pool := testDB(t, conns)
	ctx := context.Background()
	if err := migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, pool); err != nil { // idempotent
		t.Fatalf("second migrate: %v", err)
	}
	a, err := newApp(ctx, pool, "admin-token", 30*time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ln := fasthttputil.NewInmemoryListener()
	srv := newServer(a.handler())
	done := make(chan struct{})
	go func() { _ = srv.Serve(ln); close(done) }()
	t.Cleanup(func() { _ = srv.Shutdown(); <-done })
	client := &fasthttp.Client{
		Dial:            func(string) (net.Conn, error) { return ln.Dial() },
		MaxConnsPerHost: 1024,
	}
	return &testServer{app: a, pool: pool, client: client}
}

// reply is a decoded envelope.
type reply struct {
	Status         int
	Raw            string
	Success        bool            `json:"success"`
	Code           string          `json:"code"`
	Message        string          `json:"message"`
	Reason         string          `json:"reason"`
	RefundRequired bool            `json:"refundRequired"`
	Data           json.RawMessage `json:"data"`
}

func (s *testServer) do(t testing.TB, method, path string, headers map[string]string, body string) reply {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(method)
	req.SetRequestURI("http://baseline" + path)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if body != "" {
		req.Header.SetContentType("application/json")
		req.SetBodyString(body)
	}
	if err := s.client.DoTimeout(req, resp, 20*time.Second); err != nil {
		t.Errorf("%s %s: %v", method, path, err)
		return reply{}
	}
	r := reply{Status: resp.StatusCode(), Raw: string(resp.Body())}
	if err := json.Unmarshal(resp.Body(), &r); err != nil {
		t.Errorf("%s %s: not an envelope: %s", method, path, r.Raw)
	}
	return r
}

func (r reply) data(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Data, v); err != nil {
		t.Fatalf("decode data of %s: %v", r.Raw, err)
	}
}

// The test channel's credentials.
var keyed = map[string]string{"x-service-key": "ck_t", "x-service-secret": "cs_t_secret"}

func with(h map[string]string, kv ...string) map[string]string {
	out := make(map[string]string, len(h)+len(kv)/2)
	for k, v := range h {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func (s *testServer) apply(t *testing.T, doc string) reply {
	t.Helper()
	return s.do(t, "PUT", "/v1/admin/catalog", map[string]string{"Authorization": "Bearer admin-token"}, doc)
}

type reserved struct {
	OrderID   string `json:"orderId"`
	Amount    string
	Duplicate bool `json:"duplicate"`
}

// reserve posts a checkout and returns the reply and, on success, the order
// with its amount as the exact wire text.
func (s *testServer) reserve(t testing.TB, event, key, body string) (reply, reserved) {
	r := s.do(t, "POST", "/v1/channel/events/"+event+"/checkout", with(keyed, "Idempotency-Key", key), body)
	var o reserved
	if r.Success {
		var d struct {
			OrderID   string          `json:"orderId"`
			Amount    json.RawMessage `json:"amount"`
			Duplicate bool            `json:"duplicate"`
		}
		if err := json.Unmarshal(r.Data, &d); err != nil {
			t.Errorf("reserve data %s: %v", r.Raw, err)
		}
		o = reserved{OrderID: d.OrderID, Amount: string(d.Amount), Duplicate: d.Duplicate}
	}
	return r, o
}

// confirmReq signs and posts a confirm of amount (wire text) for order.
func (s *testServer) confirmReq(t testing.TB, order, amount, ref string) reply {
	cents, err := money.Parse(amount)
	if err != nil {
		t.Errorf("amount %q: %v", amount, err)
	}
	sig := ticketd.Signature("sk_t", order, cents, ref)
	body := `{"orderId":"` + order + `","amount":` + amount + `,"partnerReference":"` + ref + `"}`
	return s.do(t, "POST", "/v1/channel/orders/confirm", with(keyed, "x-service-signature", sig), body)
}
