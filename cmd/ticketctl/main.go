// Command ticketctl is the operator's tool for ticketd. apply and queue talk to the
// admin surface over HTTP (TICKETD_URL) with the admin bearer token
// (TICKETD_ADMIN_TOKEN); rebuild talks to Redis and Postgres directly
// (REDIS_URL, DATABASE_URL, TICKETD_KEY_PREFIX), and so do held, release
// and reconcile; dead-letters reads Postgres; verify checks a ticket's
// QR text offline (TICKETD_SECRETS_KEY or the event's public key).
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/ticketd/ticketd/sync/rebuild"
)

const usage = `ticketctl: the ticketd operator's tool

Usage:
  ticketctl apply -f catalog.json   apply a catalog document (-f - reads stdin)
  ticketctl rebuild                 rebuild the Redis state from Postgres
  ticketctl held                    list the events whose sales are held after a loss
  ticketctl release <event-id>      resume a held event, its lost units sold again
  ticketctl reconcile <event-id>    resume a held event, its lost units kept as sold
  ticketctl dead-letters            list the paid entries the sync worker could not write
  ticketctl queue <event-id>        show an event's waiting room: settings, line, passes
                                    (-showing <id>: a multi-showing event's line for it)
  ticketctl verify <qr-text>        check a ticket's QR code (- reads it from stdin)
  ticketctl help                    show this text

Apply flags:
  -f file       the catalog document, or - for stdin (required)
  -token token  admin bearer token (default $TICKETD_ADMIN_TOKEN)
  -url url      ticketd base URL (default $TICKETD_URL, else http://localhost:8080)

Applying creates or updates every object of the document by id; applying it
twice changes nothing. A bad document is rejected whole.

Queue reads the event's waiting room from the admin surface (GET
/v1/admin/events/<event-id>/queue, the same token and URL as apply): its
settings (mode, opensAt, salesStartAt, pass ttl, per buyer, stock) and
figures (arrivals; places waiting and their tickets; live passes and the
tickets they hold; passes admitted, the frontier, used and lapsed; the
conversion, used / (used + lapsed)). Reading it admits no one. An event
without a waiting room is said to have none (exit 1).

With -audit it prints the room's audit instead, a line an entry: id, what
(admitted, used, lapsed, left, key), place, tickets, and the place's rank
(admitted), what it was (left) or the shuffle key (key): with the key and
the ranks, anyone can check that the admission order is the committed one.

Queue flags:
  -audit        print the room's audit, in order
  -json         print the room as JSON (with -audit: one JSON object an entry)
  -token token  admin bearer token (default $TICKETD_ADMIN_TOKEN)
  -url url      ticketd base URL (default $TICKETD_URL, else http://localhost:8080)

Rebuild restores from Postgres everything capacity depends on (the catalog,
capacities, sold counts, booked seats, used discount codes, recently paid
orders and their idempotency keys), counting paid orders still on the
Redis streams once. It connects to $REDIS_URL (default
redis://127.0.0.1:6379) and $DATABASE_URL (default the local "ticketd"
database) under $TICKETD_KEY_PREFIX. ticketd may run meanwhile: its nodes
stop selling until the rebuild ends. Running it twice changes nothing.

A rebuild never counts an event below its sold mark: the highest count of
paid units any node acknowledged, which nodes record in Postgres. An event
found below it lost that many paid sales with Redis (acknowledged to
buyers, known nowhere): the rebuild keeps them counted as sold, reports the
event and its lost count, and its sales answer 503 SALES_HELD until the
operator resolves it; every other event sells again.

Rebuild flags:
  -json          print the report as JSON
  -timeout d     give up after d (default 10m)

Held lists the held events with their lost counts (from Postgres; the same
stores as rebuild). Release says the lost buyers were refunded or settled:
the event resumes with its counts as rebuilt, and sells those units again.
Reconcile keeps the lost units counted as sold (the buyers keep their
tickets), then the event resumes. Both take the catalog lock, are recorded
in Postgres, and reach every node within a second; running one again
answers that the event is not held.

Held flags:
  -all           list resolved holds too
  -json          print the holds as JSON
  -timeout d     give up after d (default 1m; release and reconcile too)

Dead-letters lists, the newest first, the paid-stream entries the sync
worker kept in Postgres' dead_letters instead of writing them as orders
($DATABASE_URL, $TICKETD_KEY_PREFIX): an entry Postgres refused, one it
could not read, or a paid order read from a Redis whose state was then
lost before it was written (no store counts it: refund the buyer or
honour the order by hand). Each line: when, the order, the stream and
entry, why. -json adds the entry's fields (the order's record: buyer,
amounts, payment reference).

Dead-letters flags:
  -json          print them as JSON, with their fields
  -limit n       list at most n (default 100)
  -timeout d     give up after d (default 1m)

Verify checks the signature of a ticket's QR text (docs/tickets.md) offline,
as a door scanner does, and prints the ticket id, event and admission and
"valid", or why it is not.

Verify flags:
  -public-key k  the event's public key, unpadded base64url (as
                 GET /v1/storefront/events/:id/ticket-key publishes it);
                 default: derived from $TICKETD_SECRETS_KEY, which is
                 then required
  -dev           check against ticketd's development key (a ticket of
                 ticketd -demo); the output says "development key": that
                 key is public, anyone can sign such a ticket, so -dev
                 (and TICKETD_SECRETS_KEY set to that key) works only
                 with TICKETD_ENV=development
  -event id      refuse a ticket of any other event
  -json          print the result as JSON

Exit status: 0 done (verify: the ticket is valid), 1 the server, a store or
the connection failed (verify: the ticket is not valid), 2 bad usage.
`

func main() {
	os.Exit(run(os.Args[1:], env{os.Stdin, os.Stdout, os.Stderr, os.Getenv}))
}

// env is what a command sees of the world, so tests can supply their own.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
}

func run(args []string, e env) int {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage)
		return 2
	}
	switch args[0] {
	case "apply":
		return apply(args[1:], e)
	case "rebuild":
		return rebuildCmd(args[1:], e)
	case "held":
		return heldCmd(args[1:], e)
	case "release":
		return resolveCmd(rebuild.Release, args[1:], e)
	case "reconcile":
		return resolveCmd(rebuild.Reconcile, args[1:], e)
	case "queue":
		return queueCmd(args[1:], e)
	case "dead-letters":
		return deadLettersCmd(args[1:], e)
	case "verify":
		return verifyCmd(args[1:], e)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(e.stdout, usage)
		return 0
	}
	fmt.Fprintf(e.stderr, "ticketctl: unknown command %q\n\n%s", args[0], usage)
	return 2
}
