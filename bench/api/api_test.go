package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMetricReadsOneSample: the value of the named sample, labels and
// all; a missing one is an error, never 0.
func TestMetricReadsOneSample(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("# HELP ticketd_redis_wait_timeouts_total Payments answered 503.\n" +
			"# TYPE ticketd_redis_wait_timeouts_total counter\n" +
			"ticketd_redis_wait_timeouts_total_other 9\n" +
			"ticketd_redis_wait_timeouts_total 3\n" +
			"ticketd_redis_state{state=\"current\"} 1\n"))
	}))
	defer srv.Close()
	c := &Client{Base: srv.URL}
	ctx := context.Background()
	for name, want := range map[string]float64{"ticketd_redis_wait_timeouts_total": 3, `ticketd_redis_state{state="current"}`: 1} {
		if got, err := c.Metric(ctx, name); err != nil || got != want {
			t.Errorf("%s = %v (%v), want %v", name, got, err, want)
		}
	}
	if _, err := c.Metric(ctx, "ticketd_redis_replicas"); err == nil || !strings.Contains(err.Error(), "no ticketd_redis_replicas") {
		t.Fatalf("a missing metric: %v", err)
	}
}
