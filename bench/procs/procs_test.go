package procs

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ticketd/ticketd/sync/pgtest"
)

func TestStartAndStop(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	p, err := Start("sleeper", sleep, []string{"30"}, nil, filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	default:
		t.Fatal("still running after Stop")
	}
	if time.Since(start) > 4*time.Second {
		t.Fatal("SIGTERM was not enough: it waited for the kill")
	}
}

func TestStackRunsStepsLastFirstOnce(t *testing.T) {
	var order []int
	s := &Stack{}
	for i := range 3 {
		s.Push("step", func(context.Context) error { order = append(order, i); return nil })
	}
	s.Close()
	s.Close()
	if len(order) != 3 || order[0] != 2 || order[2] != 0 {
		t.Fatalf("order %v, want [2 1 0] once", order)
	}
}

func TestCreateDatabaseAndDrop(t *testing.T) {
	ctx := context.Background()
	url, drop, err := CreateDatabase(ctx, pgtest.URL(), "ticketd_benchtest_")
	if err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)
	if err := drop(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := pgx.Connect(ctx, url); err == nil {
		c.Close(ctx)
		t.Fatal("the database is still there")
	}
}
