// Package server assembles ticketd's HTTP surfaces into one fasthttp server:
// routes, the body limit, health probes and the envelope for everything
// fasthttp itself rejects.
package server

import (
	"bytes"
	"context"
	"time"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/admin"
	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/apierr"
)

// Surface is a group of routes.
type Surface interface {
	Register(r *router.Router)
}

// Probe checks one dependency for /readyz.
type Probe struct {
	Name  string
	Check func(ctx context.Context) error
}

// Handler builds the root handler of all surfaces.
func Handler(probes []Probe, surfaces ...Surface) fasthttp.RequestHandler {
	r := router.New()
	r.NotFound = httpx.NotFound
	r.MethodNotAllowed = httpx.MethodNotAllowed
	r.PanicHandler = httpx.PanicHandler
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.HandleOPTIONS = false
	r.GET("/healthz", func(ctx *fasthttp.RequestCtx) { httpx.OK(ctx, map[string]string{"status": "ok"}) })
	r.GET("/readyz", readyz(probes))
	for _, s := range surfaces {
		s.Register(r)
	}
	h := r.Handler
	adminPrefix := []byte("/v1/admin/")
	return func(ctx *fasthttp.RequestCtx) {
		// Client surfaces take 64 KB; the operator's catalog may be larger,
		// so the server limit is admin.MaxCatalogBody and this enforces 64 KB
		// everywhere else.
		if len(ctx.PostBody()) > httpx.MaxBody && !bytes.HasPrefix(ctx.Path(), adminPrefix) {
			httpx.Fail(ctx, tooLarge)
			return
		}
		h(ctx)
	}
}

var tooLarge = apierr.New(fasthttp.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE", "request body is larger than 64 KB")

func readyz(probes []Probe) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		status := map[string]string{}
		ok := true
		for _, p := range probes {
			if err := p.Check(c); err != nil {
				status[p.Name] = err.Error()
				ok = false
			} else {
				status[p.Name] = "ok"
			}
		}
		if !ok {
			httpx.Fail(ctx, &apierr.Error{Status: 503, Code: "NOT_READY", Message: "a dependency is not reachable", Data: status})
			return
		}
		httpx.OK(ctx, status)
	}
}

// New returns a fasthttp server with ticketd's limits and error envelope.
func New(h fasthttp.RequestHandler) *fasthttp.Server {
	return &fasthttp.Server{
		Handler:               h,
		Name:                  "ticketd",
		MaxRequestBodySize:    admin.MaxCatalogBody,
		ErrorHandler:          httpx.ServerErrorHandler,
		ReadTimeout:           30 * time.Second,
		WriteTimeout:          30 * time.Second,
		IdleTimeout:           2 * time.Minute,
		NoDefaultServerHeader: false,
		NoDefaultContentType:  false,
		CloseOnShutdown:       true,
	}
}
