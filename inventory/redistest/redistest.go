// Package redistest gives a test its own key space on the real Redis
// (REDIS_URL, default 127.0.0.1:6379) and removes that key space when the
// test ends. Tests never share keys, so they may run in parallel.
//
// Every key space is "test:<random>:", or "test:<run>:<random>:" when
// TICKETD_TEST_RUN names the run (make test sets it): after the run its
// leftover-key check (.ci/leftover-keys.sh) finds any key of the run still
// in the shared Redis, and only those, while other runs and other users
// of that Redis go on.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/redisstate"
)

// URL is the Redis the tests use.
func URL() string {
	if u := os.Getenv("REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379"
}

// New returns a client and a fresh key space; both are cleaned up with t.
func New(t testing.TB) (rueidis.Client, keys.Space) {
	t.Helper()
	opt, err := rueidis.ParseURL(URL())
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	opt.DisableCache = true
	if d, err := time.ParseDuration(os.Getenv("TEST_REDIS_FLUSH_DELAY")); err == nil {
		opt.MaxFlushDelay = d
	}
	c, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatalf("redistest: Redis at %s is not reachable (run `make services`): %v", URL(), err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	space := keys.Space{Prefix: RunPrefix() + hex.EncodeToString(b) + ":"}
	t.Cleanup(func() {
		Flush(t, c, space)
		c.Close()
	})
	// The space starts live, as after a deployment's first start: the
	// scripts that sell refuse without their partition's marker.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := redisstate.Publish(ctx, c, space, "test"); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return c, space
}

// RunPrefix is the start of every key space of this test run: "test:",
// or "test:<TICKETD_TEST_RUN>:" when the variable is set (letters, digits,
// '-' and '_' only; anything else is ignored).
func RunPrefix() string {
	run := os.Getenv("TICKETD_TEST_RUN")
	if run == "" || strings.Trim(run, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
		return "test:"
	}
	return "test:" + run + ":"
}

// Keys lists the keys of the space other than the generation markers New
// published (those stay for the space's whole life).
func Keys(t testing.TB, c rueidis.Client, space keys.Space) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ks, err := ListKeys(ctx, c, space)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return ks
}

// ListKeys is Keys for a goroutine other than the test's, where t.Fatal
// must not be called: it returns the error instead.
func ListKeys(ctx context.Context, c rueidis.Client, space keys.Space) ([]string, error) {
	markers := map[string]bool{space.State(): true}
	for p := range keys.Partitions {
		markers[space.Live(p)] = true
	}
	all, err := allKeys(ctx, c, space)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range all {
		if !markers[k] {
			out = append(out, k)
		}
	}
	return out, nil
}

// allKeys scans every master: on a Redis Cluster each holds part of the
// space, and SCAN only sees the node it is sent to.
func allKeys(ctx context.Context, c rueidis.Client, space keys.Space) ([]string, error) {
	masters, err := redisstate.Masters(ctx, c)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range masters {
		var cursor uint64
		for {
			e, err := n.Do(ctx, n.B().Scan().Cursor(cursor).Match(space.Prefix+"*").Count(1000).Build()).AsScanEntry()
			if err != nil {
				return nil, fmt.Errorf("scan: %w", err)
			}
			out = append(out, e.Elements...)
			cursor = e.Cursor
			if cursor == 0 {
				break
			}
		}
	}
	return out, nil
}

// Flush deletes every key of the space.
func Flush(t testing.TB, c rueidis.Client, space keys.Space) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ks, err := allKeys(ctx, c, space)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	if len(ks) == 0 {
		return
	}
	dels := make(rueidis.Commands, 0, len(ks))
	for _, k := range ks {
		dels = append(dels, c.B().Del().Key(k).Build())
	}
	c.DoMulti(ctx, dels...)
}

// Client connects to the Redis at url without client-side caching (tests
// read what another client or process just wrote) and closes it with t.
// Unlike New it makes no key space: for tests that bring their own.
func Client(t testing.TB, url string) rueidis.Client {
	t.Helper()
	opt, err := rueidis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	opt.DisableCache = true
	c, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
