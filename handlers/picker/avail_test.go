package picker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/seats"
)

// Polls of one event that come together share one read; a write through
// the picker, a new catalog event, a failed read and age each make the
// next poll read again.
func TestAvailabilityReadsAreShared(t *testing.T) {
	t.Parallel()
	var c availCache
	ev := &catalog.CompiledEvent{Event: &catalog.Event{ID: "ev1"}}
	var loads atomic.Int32
	release := make(chan struct{})
	load := func() (seats.Availability, error) {
		n := loads.Add(1)
		<-release
		return seats.Availability{Held: []string{"A-" + string(rune('0'+n))}}, nil
	}
	ctx := context.Background()

	const polls = 20
	var wg sync.WaitGroup
	got := make([]seats.Availability, polls)
	first := make(chan struct{})
	go func() {
		defer close(first)
		got[0], _ = c.read(ctx, ev, load)
	}()
	for loads.Load() == 0 {
		time.Sleep(time.Millisecond) // the first poll's read is under way
	}
	for i := 1; i < polls; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _ = c.read(ctx, ev, load)
		}()
	}
	// The others wait on the read in flight; let it finish.
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	<-first
	if n := loads.Load(); n != 1 {
		t.Fatalf("%d polls together read %d times, want once", polls, n)
	}
	for i, av := range got {
		if len(av.Held) != 1 || av.Held[0] != "A-1" {
			t.Fatalf("poll %d got %+v", i, av)
		}
	}

	c.changed("ev1")
	if av, _ := c.read(ctx, ev, load); av.Held[0] != "A-2" || loads.Load() != 2 {
		t.Fatalf("after a write: %+v, %d reads", av, loads.Load())
	}
	c.changed("another event")
	if av, _ := c.read(ctx, ev, load); av.Held[0] != "A-2" {
		t.Fatalf("another event's write made a new read: %+v", av)
	}
	ev2 := &catalog.CompiledEvent{Event: &catalog.Event{ID: "ev1"}}
	if av, _ := c.read(ctx, ev2, load); av.Held[0] != "A-3" {
		t.Fatalf("a new catalog's event got the old read: %+v", av)
	}
	fail := func() (seats.Availability, error) {
		loads.Add(1)
		return seats.Availability{}, errors.New("redis down")
	}
	c.changed("ev1")
	if _, err := c.read(ctx, ev2, fail); err == nil {
		t.Fatal("a failed read was not reported")
	}
	if av, err := c.read(ctx, ev2, load); err != nil || av.Held[0] != "A-5" {
		t.Fatalf("after a failed read: %+v %v", av, err)
	}
	time.Sleep(availTTL)
	if av, _ := c.read(ctx, ev2, load); av.Held[0] != "A-6" {
		t.Fatalf("an old read was served: %+v", av)
	}
}
