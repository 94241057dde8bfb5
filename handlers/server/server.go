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
	return r.Handler
}

var adminPrefix = []byte("/v1/admin/")

// bodyLimit gives every client surface the 64 KB limit and the operator's
// catalog its larger one, decided from the header alone so that fasthttp
// stops reading an oversized body instead of buffering it.
func bodyLimit(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	if bytes.HasPrefix(h.RequestURI(), adminPrefix) {
		return fasthttp.RequestConfig{MaxRequestBodySize: admin.MaxCatalogBody}
	}
	return fasthttp.RequestConfig{MaxRequestBodySize: httpx.MaxBody}
}

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
		Handler:            h,
		Name:               "ticketd",
		MaxRequestBodySize: httpx.MaxBody,
		HeaderReceived:     bodyLimit,
		// Room for long headers (an Idempotency-Key of up to 255
		// characters and more); beyond it the request is a 431.
		ReadBufferSize:        8 << 10,
		ErrorHandler:          httpx.ServerErrorHandler,
		ReadTimeout:           30 * time.Second,
		WriteTimeout:          30 * time.Second,
		IdleTimeout:           2 * time.Minute,
		NoDefaultServerHeader: false,
		NoDefaultContentType:  false,
		CloseOnShutdown:       true,
	}
}
