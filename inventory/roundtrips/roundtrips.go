// Package roundtrips counts the Redis round trips ticketd makes: in total
// (the bench's round trips per unit, from /metrics) and per request (the
// round-trip budget test), through a rueidis client wrapped by Wrap.
//
// One call is one round trip: Do, a DoMulti pipeline (one trip however
// many commands; on a Cluster its per-node pipelines go out at once), and
// each such call on a dedicated connection. Nodes() hands out the unwrapped
// per-node clients: the state checks use them, never a request.
package roundtrips

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// Counter counts round trips.
type Counter struct{ n atomic.Int64 }

// Add counts n round trips.
func (c *Counter) Add(n int64) { c.n.Add(n) }

// Load is the count so far.
func (c *Counter) Load() int64 { return c.n.Load() }

type ctxKey struct{}

// RequestKey is the fasthttp user value under which a test's middleware
// puts a request's *Counter; the request context the surfaces make
// (handlers/guard.RequestContext) carries it on.
const RequestKey = "ticketd.roundtrips"

// With returns ctx carrying c: round trips made with it count into c.
func With(ctx context.Context, c *Counter) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// From is the counter ctx carries, or nil.
func From(ctx context.Context) *Counter {
	c, _ := ctx.Value(ctxKey{}).(*Counter)
	return c
}

// Client is a rueidis client that counts its round trips.
type Client struct {
	rueidis.Client
	total *Counter
}

// Wrap counts c's round trips into total (nil: only into the counters the
// calls' contexts carry).
func Wrap(c rueidis.Client, total *Counter) *Client {
	if total == nil {
		total = &Counter{}
	}
	return &Client{Client: c, total: total}
}

// Total is every round trip made through the client.
func (c *Client) Total() int64 { return c.total.Load() }

func (c *Client) count(ctx context.Context) {
	c.total.Add(1)
	if r := From(ctx); r != nil {
		r.Add(1)
	}
}

func (c *Client) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.count(ctx)
	return c.Client.Do(ctx, cmd)
}

func (c *Client) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	if len(multi) > 0 {
		c.count(ctx)
	}
	return c.Client.DoMulti(ctx, multi...)
}

func (c *Client) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	c.count(ctx)
	return c.Client.DoCache(ctx, cmd, ttl)
}

func (c *Client) DoMultiCache(ctx context.Context, multi ...rueidis.CacheableTTL) []rueidis.RedisResult {
	if len(multi) > 0 {
		c.count(ctx)
	}
	return c.Client.DoMultiCache(ctx, multi...)
}

func (c *Client) DoStream(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResultStream {
	c.count(ctx)
	return c.Client.DoStream(ctx, cmd)
}

func (c *Client) DoMultiStream(ctx context.Context, multi ...rueidis.Completed) rueidis.MultiRedisResultStream {
	if len(multi) > 0 {
		c.count(ctx)
	}
	return c.Client.DoMultiStream(ctx, multi...)
}

func (c *Client) Dedicated(fn func(rueidis.DedicatedClient) error) error {
	return c.Client.Dedicated(func(d rueidis.DedicatedClient) error {
		return fn(&dedicated{DedicatedClient: d, c: c})
	})
}

func (c *Client) Dedicate() (rueidis.DedicatedClient, func()) {
	d, cancel := c.Client.Dedicate()
	return &dedicated{DedicatedClient: d, c: c}, cancel
}

// dedicated counts a dedicated connection's calls into its client's counters.
type dedicated struct {
	rueidis.DedicatedClient
	c *Client
}

func (d *dedicated) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	d.c.count(ctx)
	return d.DedicatedClient.Do(ctx, cmd)
}

func (d *dedicated) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	if len(multi) > 0 {
		d.c.count(ctx)
	}
	return d.DedicatedClient.DoMulti(ctx, multi...)
}
