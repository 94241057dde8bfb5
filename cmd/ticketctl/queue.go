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
	asJSON := fs.Bool("json", false, "print the room as JSON")
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
	if *base == "" {
		*base = "http://localhost:8080"
	}
	u := strings.TrimRight(*base, "/") + "/v1/admin/events/" + url.PathEscape(event) + "/queue"
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		fmt.Fprintf(e.stderr, "ticketctl queue: %v\n", err)
		return 2
	}
	req.Header.Set("Authorization", "Bearer "+*token)
	resp, err := (&http.Client{Timeout: queueTimeout}).Do(req)
	if err != nil {
		fmt.Fprintf(e.stderr, "ticketctl queue: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		fmt.Fprintf(e.stderr, "ticketctl queue: read response: %v\n", err)
		return 1
	}
	var reply struct {
		Success bool            `json:"success"`
		Code    string          `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	ok2xx := resp.StatusCode >= 200 && resp.StatusCode < 300
	if json.Unmarshal(body, &reply) != nil || reply.Success != ok2xx || (!reply.Success && reply.Code == "") {
		fmt.Fprintf(e.stderr, "ticketctl queue: %s from %s: %s\n", resp.Status, u, excerpt(body))
		return 1
	}
	if !reply.Success {
		switch reply.Code {
		case "NO_WAITING_ROOM":
			fmt.Fprintf(e.stderr, "ticketctl queue: event %s has no waiting room (its catalog event has no waitingRoom): it sells without a queue\n", event)
		case "EVENT_NOT_FOUND":
			fmt.Fprintf(e.stderr, "ticketctl queue: no event %q in ticketd's catalog\n", event)
		case "NOT_FOUND":
			// The router's 404: no such route, the admin surface is off.
			fmt.Fprintf(e.stderr, "ticketctl queue: %s answered 404 NOT_FOUND: its admin surface is off (start ticketd with TICKETD_ADMIN_TOKEN) or it is older than the queue read\n", *base)
		default:
			fmt.Fprintf(e.stderr, "ticketctl queue: %s (HTTP %d): %s\n", reply.Code, resp.StatusCode, reply.Message)
		}
		return 1
	}
	var v admin.QueueView
	if err := json.Unmarshal(reply.Data, &v); err != nil || v.EventID == "" {
		fmt.Fprintf(e.stderr, "ticketctl queue: success without a room: %s\n", excerpt(body))
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

// printQueue is the room as a short table: settings, then figures.
func printQueue(w io.Writer, v admin.QueueView) {
	r, s := v.Room, v.Stats
	conv := "- (no pass ended yet)"
	if s.Conversion != nil {
		conv = strconv.FormatFloat(100**s.Conversion, 'f', 1, 64) + "% (used / (used + lapsed))"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "event\t%s\n", v.EventID)
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
