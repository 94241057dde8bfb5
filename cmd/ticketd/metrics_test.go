package main

import (
	"context"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/redistest"
)

// TestRebuildAtStartIsCounted: ticketd restarted on a Redis that lost its
// state (the probe) rebuilds it before it serves; that rebuild is
// in ticketd_rebuilds_total like one the monitor runs.
func TestRebuildAtStartIsCounted(t *testing.T) {
	cfg := localConfig(t)
	rc, space := redistest.New(t)
	cfg.KeyPrefix, cfg.Recovery = space.Prefix, recoveryAuto
	t.Run("first start", func(t *testing.T) { demoFlow(t, startTicketd(t, cfg)) })

	// Redis restarted empty: everything of the space is gone, the
	// generation markers too.
	ctx := context.Background()
	gone := append(redistest.Keys(t, rc, space), space.State())
	for p := range keys.Partitions {
		gone = append(gone, space.Live(p))
	}
	for _, k := range gone {
		if err := rc.Do(ctx, rc.B().Del().Key(k).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	base := startTicketd(t, cfg)
	st, body := call(t, "GET", base+"/metrics", nil, "")
	if st != 200 || !strings.Contains(body, "\nticketd_rebuilds_total{result=\"ok\"} 1\n") {
		t.Fatalf("/metrics after a rebuild at start: %d\n%s", st, grepLines(body, "ticketd_rebuilds_total"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
