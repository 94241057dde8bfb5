package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/sync/worker"
)

// deadLettersCmd lists the paid-stream entries the sync worker kept in
// dead_letters instead of writing them as orders, the newest first: what
// an operator refunds or honours by hand.
func deadLettersCmd(args []string, e env) int {
	fs := flag.NewFlagSet("dead-letters", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the dead letters as JSON, with their entries' fields")
	limit := fs.Int("limit", 100, "list at most this many")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	at, code := parseStores(fs, args, 0, e)
	if code >= 0 {
		return code
	}
	if *limit <= 0 {
		fmt.Fprintln(e.stderr, "ticketctl dead-letters: -limit must be at least 1")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	// Postgres alone: the dead letters are there, whatever Redis holds.
	pool, err := at.postgres(ctx)
	if err != nil {
		fmt.Fprintln(e.stderr, "ticketctl dead-letters:", err)
		return 1
	}
	defer pool.Close()
	ds, err := worker.DeadLetters(ctx, pool, at.space, *limit)
	if err != nil {
		fmt.Fprintln(e.stderr, "ticketctl dead-letters:", err)
		return 1
	}
	if *asJSON {
		if ds == nil {
			ds = []worker.DeadLetter{}
		}
		b, _ := json.MarshalIndent(ds, "", "  ")
		fmt.Fprintln(e.stdout, string(b))
		return 0
	}
	if len(ds) == 0 {
		fmt.Fprintln(e.stdout, "no dead letters")
		return 0
	}
	for _, d := range ds {
		order := d.OrderID
		if order == "" {
			order = "-"
		}
		fmt.Fprintf(e.stdout, "%s  %s  %s %s  %s\n", d.CreatedAt.UTC().Format(time.RFC3339), order, d.Stream, d.EntryID, d.Error)
	}
	return 0
}
