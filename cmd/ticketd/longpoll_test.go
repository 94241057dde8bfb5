package main

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A node shutting down answers the waiting room's long-polls at once
// rather than draining for as long as they wait: the buyer hears where
// they stand, and the shutdown takes no longer for them.
func TestShutdownAnswersTheLongPolls(t *testing.T) {
	cfg := localConfig(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, cfg, options{API: true, Worker: true, Demo: true}, slog.New(slog.NewTextHandler(io.Discard, nil)), ready)
	}()
	var base string
	select {
	case addr := <-ready:
		base = "http://" + addr
	case err := <-done:
		t.Fatalf("ticketd did not start: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("ticketd did not start in 30s")
	}
	h := map[string]string{"x-service-key": "pk_demo", "Origin": "http://localhost:8081", "content-type": "application/json"}
	// the demo's room admits from a minute after the start: the place waits
	st, body := call(t, "POST", base+"/v1/storefront/queue/ev_demo_room/join", h, `{"email":"ada@example.com","quantity":1,"device":"d-1"}`)
	tok := regexp.MustCompile(`"pollToken":"([^"]+)"`).FindStringSubmatch(body)
	if st != 200 || tok == nil || !strings.Contains(body, `"state":"waiting"`) {
		t.Fatalf("join: %d %s, want a waiting place", st, body)
	}
	h["Authorization"] = "Bearer " + tok[1]
	type answer struct {
		status int
		body   string
	}
	polled := make(chan answer, 1)
	go func() {
		st, body := call(t, "GET", base+"/v1/storefront/queue/ev_demo_room/status?wait=25", h, "")
		polled <- answer{st, body}
	}()
	time.Sleep(300 * time.Millisecond) // the long-poll waits
	stopped := time.Now()
	cancel()
	select {
	case a := <-polled:
		if a.status != 200 || !strings.Contains(a.body, `"state":"waiting"`) {
			t.Errorf("the long-poll at shutdown: %d %s, want the place, waiting", a.status, a.body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the long-poll was not answered 10 s into the shutdown")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ticketd stopped with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ticketd did not stop 10 s after its long-poll was answered")
	}
	if took := time.Since(stopped); took > 10*time.Second {
		t.Fatalf("the shutdown took %v", took)
	}
}
