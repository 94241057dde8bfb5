// Package server assembles ticketd's HTTP surfaces into one fasthttp server:
// routes, the body limit and the budget of bodies being received, the header
// and body read deadlines, health probes, the OpenAPI document (apidoc),
// fasthttp's own log lines (through slog, with nothing a client sent) and
// the envelope for everything fasthttp itself rejects.
package server

import (
	"log/slog"
	"time"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/apidoc"
	"github.com/ticketd/ticketd/handlers/httpx"
)

// Surface is a group of routes.
type Surface interface {
	Register(r *router.Router)
}

// Handler builds the root handler of all surfaces. health is the source of
// /readyz; nil answers 200 whenever the server is up. The router records
// the matched route template (SaveMatchedRoutePath) for metrics.Instrument.
func Handler(health HealthFunc, surfaces ...Surface) fasthttp.RequestHandler {
	return Router(health, surfaces...).Handler
}

// Router is Handler's router, whose List is every route served.
func Router(health HealthFunc, surfaces ...Surface) *router.Router {
	r := router.New()
	r.NotFound = httpx.NotFound
	r.MethodNotAllowed = httpx.MethodNotAllowed
	r.PanicHandler = httpx.PanicHandler
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.HandleOPTIONS = false
	r.SaveMatchedRoutePath = true
	r.GET("/healthz", func(ctx *fasthttp.RequestCtx) { httpx.OK(ctx, map[string]string{"status": "ok"}) })
	r.GET("/readyz", readyz(health))
	apidoc.Register(r) // GET /openapi.json: the contract, without credentials
	for _, s := range surfaces {
		s.Register(r)
	}
	return r
}

// Option configures New.
type Option func(*settings)

type settings struct {
	adminToken                 string
	logger                     *slog.Logger
	bodies                     *Bodies
	bodiesSet                  bool
	headerTimeout, bodyTimeout time.Duration
}

// The read deadlines (docs/decisions.md, Operations). A request's headers
// must arrive within HeaderTimeout of its first byte (of the connection's
// opening, for its first request); its body within BodyTimeout of the
// end of its headers: 64 KB in 20 s is 3.2 KB/s, which any phone does. The
// operator's authenticated catalog, up to 8 MB, gets CatalogBodyTimeout.
// A slow sender holds a connection and a body's memory no longer than this.
const (
	HeaderTimeout      = 10 * time.Second
	BodyTimeout        = 20 * time.Second
	CatalogBodyTimeout = 2 * time.Minute
)

// AdminToken is the operator's bearer token: a PUT of the catalog that
// carries it may send a body up to admin.MaxCatalogBody. Without it (or
// with "") every request is held to the 64 KB client limit.
func AdminToken(token string) Option { return func(s *settings) { s.adminToken = token } }

// Logger receives fasthttp's own log lines (malformed requests, accept
// errors) and the body budget's; nil or absent means slog.Default() at
// the time of the line.
func Logger(l *slog.Logger) Option { return func(s *settings) { s.logger = l } }

// BodyBudget sets the budget of request bodies; nil turns it off. Absent,
// the server has a budget of DefaultBodyMemory of its own.
func BodyBudget(b *Bodies) Option { return func(s *settings) { s.bodies, s.bodiesSet = b, true } }

// Timeouts replaces HeaderTimeout and BodyTimeout (tests).
func Timeouts(header, body time.Duration) Option {
	return func(s *settings) { s.headerTimeout, s.bodyTimeout = header, body }
}

// New returns a fasthttp server with ticketd's limits, error envelope and
// logger.
func New(h fasthttp.RequestHandler, opts ...Option) *fasthttp.Server {
	st := settings{headerTimeout: HeaderTimeout, bodyTimeout: BodyTimeout}
	for _, o := range opts {
		o(&st)
	}
	if !st.bodiesSet {
		st.bodies = NewBodies(DefaultBodyMemory, st.logger)
	}
	log := &logger{log: st.logger}
	a := newAdmission(st, log)
	return &fasthttp.Server{
		Handler:            a.handler(h),
		Name:               "ticketd",
		MaxRequestBodySize: httpx.MaxBody,
		HeaderReceived:     a.config,
		ExpectHandler:      a.expect,
		// Room for long headers (an Idempotency-Key of up to 255
		// characters and more); beyond it the request is a 431.
		ReadBufferSize: 8 << 10,
		ErrorHandler:   a.errorHandler,
		Logger:         log,
		// Keeps fasthttp from copying the request into its error values;
		// the logger prints none of their text either way.
		SecureErrorLogMessage: true,
		// The header deadline; HeaderReceived sets the body's.
		ReadTimeout:           st.headerTimeout,
		WriteTimeout:          30 * time.Second,
		IdleTimeout:           2 * time.Minute,
		NoDefaultServerHeader: false,
		NoDefaultContentType:  false,
		CloseOnShutdown:       true,
	}
}
