// Package server assembles ticketd's HTTP surfaces into one fasthttp server:
// routes, the body limit, health probes, fasthttp's own log lines (through
// slog, with nothing a client sent) and the envelope for everything fasthttp
// itself rejects.
package server

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"time"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/admin"
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
	for _, s := range surfaces {
		s.Register(r)
	}
	return r.Handler
}

// Option configures New.
type Option func(*settings)

type settings struct {
	adminToken string
	logger     *slog.Logger
}

// AdminToken is the operator's bearer token: a PUT of the catalog that
// carries it may send a body up to admin.MaxCatalogBody. Without it (or
// with "") every request is held to the 64 KB client limit.
func AdminToken(token string) Option { return func(s *settings) { s.adminToken = token } }

// Logger receives fasthttp's own log lines (malformed requests, accept
// errors); nil or absent means slog.Default() at the time of the line.
func Logger(l *slog.Logger) Option { return func(s *settings) { s.logger = l } }

// New returns a fasthttp server with ticketd's limits, error envelope and
// logger.
func New(h fasthttp.RequestHandler, opts ...Option) *fasthttp.Server {
	var st settings
	for _, o := range opts {
		o(&st)
	}
	return &fasthttp.Server{
		Handler:            h,
		Name:               "ticketd",
		MaxRequestBodySize: httpx.MaxBody,
		HeaderReceived:     newBodyLimit(st.adminToken).config,
		// Room for long headers (an Idempotency-Key of up to 255
		// characters and more); beyond it the request is a 431.
		ReadBufferSize: 8 << 10,
		ErrorHandler:   httpx.ServerErrorHandler,
		Logger:         &logger{log: st.logger},
		// Keeps fasthttp from copying the request into its error values;
		// the logger prints none of their text either way.
		SecureErrorLogMessage: true,
		ReadTimeout:           30 * time.Second,
		WriteTimeout:          30 * time.Second,
		IdleTimeout:           2 * time.Minute,
		NoDefaultServerHeader: false,
		NoDefaultContentType:  false,
		CloseOnShutdown:       true,
	}
}

// catalogPath is the one route that takes the admin body limit
// (handlers/admin registers it).
const catalogPath = "/v1/admin/catalog"

// bodyLimit picks each request's body limit from its header alone, before
// fasthttp reads the body, so an oversized body is refused unread. Only
// the operator's catalog, sent with the valid admin token, may exceed the
// 64 KB client limit: a larger body is never buffered for a caller who has
// not authenticated (a path prefix alone let anyone make ticketd hold 8 MB
// per connection). A nil *bodyLimit, the one without an admin token,
// gives every request the client limit.
type bodyLimit struct {
	// bearerSum is the SHA-256 of "Bearer <token>"; comparing digests in
	// constant time tells nothing of the token, not even its length.
	bearerSum [sha256.Size]byte
}

func newBodyLimit(adminToken string) *bodyLimit {
	if adminToken == "" {
		return nil
	}
	return &bodyLimit{bearerSum: sha256.Sum256([]byte("Bearer " + adminToken))}
}

var (
	clientLimit  = fasthttp.RequestConfig{MaxRequestBodySize: httpx.MaxBody}
	catalogLimit = fasthttp.RequestConfig{MaxRequestBodySize: admin.MaxCatalogBody}
)

func (b *bodyLimit) config(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	if b == nil || !h.IsPut() {
		return clientLimit
	}
	path := h.RequestURI()
	if i := bytes.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	if string(path) != catalogPath {
		return clientLimit
	}
	sum := sha256.Sum256(h.Peek(fasthttp.HeaderAuthorization))
	if subtle.ConstantTimeCompare(sum[:], b.bearerSum[:]) != 1 {
		return clientLimit
	}
	return catalogLimit
}
