package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/handlers/admin"
)

// queueTimeout bounds one queue read; the server gives up after 5s.
const queueTimeout = 15 * time.Second

// queueCmd reads an event's waiting room from the admin surface (GET
// /v1/admin/events/{id}/queue) and prints its settings and figures.
func queueCmd(args []string, e env) int {
	fs := flag.NewFlagSet("queue", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() { fmt.Fprint(e.stderr, usage) }
	token := fs.String("token", e.getenv("TICKETD_ADMIN_TOKEN"), "admin bearer token")
	base := fs.String("url", e.getenv("TICKETD_URL"), "ticketd base URL")
	asJSON := fs.Bool("json", false, "print the room as JSON (with -audit: one JSON object an entry)")
	showing := fs.String("showing", "", "the showing whose line to read, on a multi-showing event (a line per showing)")
	audit := fs.Bool("audit", false, "print the room's audit: each pass given (in admission order, with its place's rank), used, lapsed or given back, and the shuffle key once shown")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	switch {
	case fs.NArg() != 1:
		fmt.Fprintln(e.stderr, "ticketctl queue: one event id is required: ticketctl queue <event-id>")
		return 2
	case *token == "":
		fmt.Fprintln(e.stderr, "ticketctl queue: no admin token: set TICKETD_ADMIN_TOKEN or pass -token (the queue is read from ticketd's admin surface)")
		return 2
	}
	event := fs.Arg(0)
	*base = adminBase(*base)
	path := strings.TrimRight(*base, "/") + "/v1/admin/events/" + url.PathEscape(event) + "/queue"
	explain := func(code string) string {
		switch code {
		case "NO_WAITING_ROOM":
			return "event " + event + " has no waiting room (its catalog event has no waitingRoom): it sells without a queue"
		case "EVENT_NOT_FOUND":
			return fmt.Sprintf("no event %q in ticketd's catalog", event)
		case "SHOWING_REQUIRED":
			return "event " + event + " has a line per showing: name one with -showing <showing-id>"
		case "SHOWING_NOT_FOUND":
			return fmt.Sprintf("event %s has no showing %q (without showings, leave -showing out)", event, *showing)
		}
		return ""
	}
	get := func(u string) (json.RawMessage, bool) {
		return adminDo(e, adminCall{cmd: "queue", method: http.MethodGet, url: u, base: *base, token: *token, timeout: queueTimeout, explain: explain})
	}
	sel := "" // the showing's line, as a query
	if *showing != "" {
		sel = "showingId=" + url.QueryEscape(*showing)
	}
	if *audit {
		return printAudit(e, get, path+"/audit", sel, *asJSON)
	}
	if sel != "" {
		path += "?" + sel
	}
	data, ok := get(path)
	if !ok {
		return 1
	}
	var v admin.QueueView
	if err := json.Unmarshal(data, &v); err != nil || v.EventID == "" {
		fmt.Fprintf(e.stderr, "ticketctl queue: success without a room: %s\n", excerpt(data))
		return 1
	}
	if *asJSON {
		b, _ := json.MarshalIndent(v, "", "  ")
		fmt.Fprintln(e.stdout, string(b))
		return 0
	}
	printQueue(e.stdout, v)
	return 0
}

// printAudit prints the room's whole audit, a line an entry (with -json,
// one JSON object a line), reading it a page at a time; sel is the
// showing's query ("" none).
func printAudit(e env, get func(string) (json.RawMessage, bool), u, sel string, asJSON bool) int {
	after := ""
	for {
		q := u + "?count=10000"
		if sel != "" {
			q += "&" + sel
		}
		if after != "" {
			q += "&after=" + url.QueryEscape(after)
		}
		data, ok := get(q)
		if !ok {
			return 1
		}
		var page admin.AuditView
		if err := json.Unmarshal(data, &page); err != nil {
			fmt.Fprintf(e.stderr, "ticketctl queue: an audit page that does not decode: %s\n", excerpt(data))
			return 1
		}
		for _, en := range page.Entries {
			if asJSON {
				b, _ := json.Marshal(en)
				fmt.Fprintln(e.stdout, string(b))
				continue
			}
			detail := ""
			switch en.What {
			case "admitted":
				detail = "rank " + en.Rank
			case "left":
				detail = "was " + en.Was
			case "key":
				detail = "shuffle key " + en.Key
			}
			fmt.Fprintf(e.stdout, "%s\t%s\t%s\t%d\t%s\n", en.ID, en.What, en.QueueID, en.Units, detail)
		}
		if page.Next == "" {
			return 0
		}
		after = page.Next
	}
}

// printQueue is the room as a short table: settings, then figures.
func printQueue(w io.Writer, v admin.QueueView) {
	r, s := v.Room, v.Stats
	conv := "- (no pass ended yet)"
	if s.Conversion != nil {
		conv = strconv.FormatFloat(100**s.Conversion, 'f', 1, 64) + "% (used / (used + lapsed))"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "event\t%s\n", v.EventID)
	if v.ShowingID != "" {
		fmt.Fprintf(tw, "showing\t%s\n", v.ShowingID)
	}
	fmt.Fprintf(tw, "mode\t%s\n", r.Mode)
	fmt.Fprintf(tw, "opens at\t%s\n", r.OpensAt)
	fmt.Fprintf(tw, "sales start at\t%s\n", r.SalesStartAt)
	fmt.Fprintf(tw, "pass ttl\t%ds\n", r.PassTTL)
	fmt.Fprintf(tw, "per buyer\t%d\n", r.PerBuyer)
	fmt.Fprintf(tw, "stock\t%d\n", r.Stock)
	fmt.Fprintf(tw, "arrivals\t%d\n", s.Arrivals)
	fmt.Fprintf(tw, "waiting\t%d places, %d tickets\n", s.Waiting, s.WaitingUnits)
	fmt.Fprintf(tw, "live passes\t%d, holding %d tickets\n", s.LivePasses, s.Reserved)
	fmt.Fprintf(tw, "admitted\t%d (the frontier)\n", s.Admitted)
	fmt.Fprintf(tw, "passes used\t%d\n", s.Used)
	fmt.Fprintf(tw, "passes lapsed\t%d\n", s.Lapsed)
	fmt.Fprintf(tw, "conversion\t%s\n", conv)
	_ = tw.Flush()
}
