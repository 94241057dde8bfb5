package main

import (
	"context"
	"strings"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/sync/worker"
)

// dead-letters lists the key space's dead letters, the newest first, with
// the order each names and why; -json adds the entry's fields; another
// key space's dead letters are not listed; -limit bounds the list.
func TestDeadLettersCommand(t *testing.T) {
	t.Parallel()
	s := servertest.Start(t, servertest.Options{})
	vars := map[string]string{"DATABASE_URL": s.DatabaseURL, "TICKETD_KEY_PREFIX": s.Space.Prefix}
	if r := ticketctl(vars, "", "dead-letters"); r.code != 0 || !strings.Contains(r.stdout, "no dead letters") {
		t.Fatalf("dead-letters with none: %+v", r)
	}
	ctx := context.Background()
	for _, row := range [][4]string{
		{s.Space.Paid(3), "1-1", `{"order":"o1.ev_a","rec":"{\"buyerEmail\":\"ada@example.com\"}"}`, "paid on a Redis whose state was lost"},
		{s.Space.Paid(7), "2-1", `{"junk":"x"}`, "entry has no order"},
		{"other:" + s.Space.Paid(3), "3-1", `{"order":"o9.ev_z"}`, "another deployment's"},
	} {
		if _, err := s.Pool.Exec(ctx, `INSERT INTO dead_letters (stream, entry_id, fields, error) VALUES ($1, $2, $3, $4)`,
			row[0], row[1], row[2], row[3]); err != nil {
			t.Fatal(err)
		}
	}
	r := ticketctl(vars, "", "dead-letters")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 2 || !strings.Contains(lines[0], "  -  "+s.Space.Paid(7)+" 2-1  entry has no order") ||
		!strings.Contains(lines[1], "  o1.ev_a  "+s.Space.Paid(3)+" 1-1  paid on a Redis whose state was lost") {
		t.Fatalf("dead-letters: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = ticketctl(vars, "", "dead-letters", "-json", "-limit", "1")
	var ds []worker.DeadLetter
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &ds) != nil || len(ds) != 1 || ds[0].EntryID != "2-1" || ds[0].Fields["junk"] != "x" {
		t.Fatalf("dead-letters -json -limit 1: %+v", r)
	}
	r = ticketctl(vars, "", "dead-letters", "-json")
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &ds) != nil || len(ds) != 2 || !strings.Contains(ds[1].Fields["rec"], "ada@example.com") {
		t.Fatalf("dead-letters -json: %+v", r)
	}
	if r := ticketctl(vars, "", "dead-letters", "-limit", "0"); r.code != 2 {
		t.Fatalf("-limit 0: %+v", r)
	}
	if r := ticketctl(map[string]string{"DATABASE_URL": "postgres://x:pw@127.0.0.1:1/x"}, "", "dead-letters", "-timeout", "5s"); r.code != 1 ||
		!strings.Contains(r.stderr, "connect to Postgres") || strings.Contains(r.stderr, "pw") {
		t.Fatalf("unreachable Postgres: %+v", r)
	}
}
