package rebuild

import (
	"context"
	"testing"

	"github.com/ticketd/ticketd/inventory/redisstate"
	"github.com/ticketd/ticketd/sync/pgtest"
)

// The record only moves forward: Save inserts the first generation,
// raises its sequence and never lowers it, and leaves alone what a later
// rebuild published; key prefixes have records of their own.
func TestGenerationsMoveForwardOnly(t *testing.T) {
	pool := pgtest.New(t)
	ctx := context.Background()
	g := &Generations{Pool: pool, Prefix: "a:"}
	load := func() redisstate.Mark {
		t.Helper()
		m, ok, err := g.Load(ctx)
		if err != nil || !ok {
			t.Fatalf("load: %+v %v %v", m, ok, err)
		}
		return m
	}
	if _, ok, err := g.Load(ctx); ok || err != nil {
		t.Fatalf("empty record: %v %v", ok, err)
	}
	for _, m := range []redisstate.Mark{{Gen: "g1", Seq: 5}, {Gen: "g1", Seq: 9}, {Gen: "g1", Seq: 7}, {Gen: "g0", Seq: 99}} {
		if err := g.Save(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if m := load(); m != (redisstate.Mark{Gen: "g1", Seq: 9}) {
		t.Fatalf("record %+v, want g1 at 9", m)
	}
	if err := g.publish(ctx, "g2"); err != nil {
		t.Fatal(err)
	}
	if err := g.Save(ctx, redisstate.Mark{Gen: "g1", Seq: 50}); err != nil {
		t.Fatal(err)
	}
	if m := load(); m != (redisstate.Mark{Gen: "g2", Seq: 0}) {
		t.Fatalf("record %+v after publishing g2 and a late save of g1, want g2 at 0", m)
	}
	other := &Generations{Pool: pool, Prefix: "b:"}
	if _, ok, _ := other.Load(ctx); ok {
		t.Fatal("prefix b: sees prefix a:'s record")
	}
}
