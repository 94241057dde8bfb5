package rebuild_test

import (
	"context"
	"testing"

	"github.com/ticketd/ticketd/handlers/servertest"
)

// Recovery rebuilds while Redis still holds the generation the asking node
// found bad, or lacks a partition's marker; once another node or an
// operator rebuilt (another generation live on every partition) it does
// nothing: a second rebuild would stop sales for nothing.
func TestRecoverRebuildsOnlyWhatIsStillBad(t *testing.T) {
	s := servertest.StartWithCatalog(t, servertest.Options{ManualRecovery: true})
	ctx := context.Background()
	live := s.Monitor.View().Gen
	if _, rebuilt, err := s.Rebuilder.Recover(ctx, "older"); err != nil || rebuilt {
		t.Fatalf("recovery from an older generation while %q is live: rebuilt %v, %v; want nothing done", live, rebuilt, err)
	}
	if _, rebuilt, err := s.Rebuilder.Recover(ctx, live); err != nil || !rebuilt {
		t.Fatalf("recovery from the live generation: rebuilt %v, %v; want a rebuild", rebuilt, err)
	}
	if err := s.Redis.Do(ctx, s.Redis.B().Del().Key(s.Space.Live(17)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if _, rebuilt, err := s.Rebuilder.Recover(ctx, "older"); err != nil || !rebuilt {
		t.Fatalf("recovery with partition 17's marker gone: rebuilt %v, %v; want a rebuild", rebuilt, err)
	}
}
