package main

import (
	"context"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/sync/rebuild"
)

// A rebuild that finds ev_ga below its sold mark reports it held with its
// lost count; `ticketctl held` lists it; a running ticketd answers its
// reserves 503 SALES_HELD until `ticketctl reconcile`, which is recorded
// and cannot be run twice.
func TestHeldReleaseReconcileCommands(t *testing.T) {
	s, vars := soldOnManualRecovery(t, 1)
	// Another node acknowledged 2 more that nothing holds any more.
	if err := (&rebuild.Marks{Pool: s.Pool, Prefix: s.Space.Prefix}).Raise(context.Background(), map[string]int64{"ev_ga": 3}); err != nil {
		t.Fatal(err)
	}
	if r := ticketctl(vars, "", "held"); r.code != 0 || !strings.Contains(r.stdout, "no event's sales are held") {
		t.Fatalf("held before: %+v", r)
	}
	r := ticketctl(vars, "", "rebuild")
	if r.code != 0 || !strings.Contains(r.stdout, "held events       1") || !strings.Contains(r.stdout, "ev_ga  lost 2 (2 found now)") {
		t.Fatalf("rebuild: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "sales of an event stay held") || !strings.Contains(r.stderr, "lost=2") {
		t.Fatalf("rebuild's log lacks the held event: %s", r.stderr)
	}
	if r := ticketctl(vars, "", "held"); r.code != 0 || !strings.Contains(r.stdout, "ev_ga  lost 2") || !strings.Contains(r.stdout, "HELD") {
		t.Fatalf("held: %+v", r)
	}
	tk := map[string]any{"selectedTicketId": "tk_a", "quantity": 1}
	waitCode(t, s, tk, "SALES_HELD")

	if r := ticketctl(vars, "", "reconcile"); r.code != 2 {
		t.Fatalf("reconcile without an event: %+v", r)
	}
	r = ticketctl(vars, "", "reconcile", "ev_ga")
	if r.code != 0 || !strings.Contains(r.stdout, "ev_ga: reconciled 2 lost units") {
		t.Fatalf("reconcile: %+v", r)
	}
	waitCode(t, s, tk, "")
	if r := ticketctl(vars, "", "release", "ev_ga"); r.code != 1 || !strings.Contains(r.stderr, "not held") {
		t.Fatalf("release after reconcile: %+v", r)
	}
	r = ticketctl(vars, "", "held", "-all", "-json")
	var hs []rebuild.Hold
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &hs) != nil || len(hs) != 1 || hs[0].Resolution != rebuild.Reconcile || hs[0].Lost != 2 {
		t.Fatalf("held -all -json: %+v", r)
	}
}

// waitCode waits until a reserve on ev_ga answers code ("" for success).
func waitCode(t *testing.T, s *servertest.Server, body map[string]any, code string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := s.Reserve(t, "a", "ev_ga", body)
		got := r.Code
		if r.Status == 200 {
			got = ""
		}
		if got == code {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("reserve answers %s, want %q", r, code)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A REDIS_URL that does not parse is reported without the password it
// holds (url.Parse's error repeats the whole URL).
func TestStoreCommandsHideTheRedisPassword(t *testing.T) {
	for _, cmd := range []string{"rebuild", "held"} {
		r := ticketctl(map[string]string{"REDIS_URL": "redis://u:s3cret@host:badport/0"}, "", cmd)
		if r.code == 0 || strings.Contains(r.stdout+r.stderr, "s3cret") || !strings.Contains(r.stderr, "REDIS_URL") {
			t.Errorf("ticketctl %s with a bad REDIS_URL: exit %d, stderr %q: want a failure naming REDIS_URL without its password",
				cmd, r.code, r.stderr)
		}
	}
}
