package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/sync/rebuild"
)

// heldCmd lists the events whose sales a rebuild held after a loss
// ticketd could not repair (docs/decisions.md, Durability and recovery).
func heldCmd(args []string, e env) int {
	fs := flag.NewFlagSet("held", flag.ContinueOnError)
	all := fs.Bool("all", false, "list resolved holds too")
	asJSON := fs.Bool("json", false, "print the holds as JSON")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	at, code := parseStores(fs, args, 0, e)
	if code >= 0 {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	_, pool, closeAll, err := at.connect(ctx)
	if err != nil {
		fmt.Fprintln(e.stderr, "ticketctl held:", err)
		return 1
	}
	defer closeAll()
	hs, err := rebuild.Holds(ctx, pool, at.space.Prefix, *all)
	if err != nil {
		fmt.Fprintln(e.stderr, "ticketctl held:", err)
		return 1
	}
	if *asJSON {
		if hs == nil {
			hs = []rebuild.Hold{}
		}
		b, _ := json.MarshalIndent(hs, "", "  ")
		fmt.Fprintln(e.stdout, string(b))
		return 0
	}
	if len(hs) == 0 {
		fmt.Fprintln(e.stdout, "no event's sales are held")
		return 0
	}
	for _, h := range hs {
		state := "HELD"
		if h.ReleasedAt != nil {
			state = h.Resolution + "d " + h.ReleasedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(e.stdout, "%s  lost %d  found %s  %s\n", h.EventID, h.Lost, h.DetectedAt.UTC().Format(time.RFC3339), state)
	}
	return 0
}

// resolveCmd is release and reconcile: the operator's answer to a held
// event, recorded in Postgres; every node sells the event again within a
// state check.
func resolveCmd(resolution string, args []string, e env) int {
	fs := flag.NewFlagSet(resolution, flag.ContinueOnError)
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	at, code := parseStores(fs, args, 1, e)
	if code >= 0 {
		return code
	}
	event := fs.Arg(0)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	rc, pool, closeAll, err := at.connect(ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "ticketctl %s: %v\n", resolution, err)
		return 1
	}
	defer closeAll()
	h, err := rebuild.Resolve(ctx, rc, at.space, pool, 0, event, resolution)
	if errors.Is(err, rebuild.ErrNotHeld) {
		fmt.Fprintf(e.stderr, "ticketctl %s: %s: %v (ticketctl held lists the held events)\n", resolution, event, err)
		return 1
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "ticketctl %s: %v\n", resolution, err)
		return 1
	}
	what := "the lost units left its sold count: it sells them again"
	if resolution == rebuild.Reconcile {
		what = "the lost units stay counted as sold against its capacity"
	}
	fmt.Fprintf(e.stdout, "%s: %s %d lost units; %s; its sales resume on every node within a second\n", event, resolution+"d", h.Lost, what)
	return 0
}
