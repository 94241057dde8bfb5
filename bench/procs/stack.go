// Package procs starts what a bench run needs as separate processes
// (ticketd, the baseline server, the canned ceiling server), each built
// with go build and listening on a free loopback port, gives them fresh
// Postgres databases, and undoes all of it at the end, also after Ctrl-C.
package procs

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// Stack holds the clean-up steps of a run, undone last first.
type Stack struct {
	mu    sync.Mutex
	steps []step
	// Log receives a line per step that fails.
	Log io.Writer
}

type step struct {
	name string
	fn   func(ctx context.Context) error
}

// Push adds a clean-up step.
func (s *Stack) Push(name string, fn func(ctx context.Context) error) {
	s.mu.Lock()
	s.steps = append(s.steps, step{name, fn})
	s.mu.Unlock()
}

// Close runs every step, last pushed first, each with its own time limit,
// whatever the run's context became; a failed step does not stop the
// others. Calling it again does nothing.
func (s *Stack) Close() {
	s.mu.Lock()
	steps := s.steps
	s.steps = nil
	s.mu.Unlock()
	for i := len(steps) - 1; i >= 0; i-- {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := steps[i].fn(ctx); err != nil && s.Log != nil {
			fmt.Fprintf(s.Log, "bench: clean-up %s: %v\n", steps[i].name, err)
		}
		cancel()
	}
}
