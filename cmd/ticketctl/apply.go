package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// applyTimeout bounds one apply; the server itself gives up after 30s.
const applyTimeout = time.Minute

// envelope is ticketd's response shape, success or failure.
type envelope struct {
	Success bool   `json:"success"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Data    struct {
		Applied *struct {
			Tenants  int `json:"tenants"`
			Channels int `json:"channels"`
			Events   int `json:"events"`
		} `json:"applied"`
	} `json:"data"`
}

// apply PUTs a catalog document to /v1/admin/catalog and reports the counts
// applied, or the server's error code and message.
func apply(args []string, e env) int {
	fs := flag.NewFlagSet("apply", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() { fmt.Fprint(e.stderr, usage) }
	file := fs.String("f", "", "catalog document, or - for stdin")
	token := fs.String("token", e.getenv("TICKETD_ADMIN_TOKEN"), "admin bearer token")
	base := fs.String("url", e.getenv("TICKETD_URL"), "ticketd base URL")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(e.stderr, "ticketctl apply: unexpected argument %q\n", fs.Arg(0))
		return 2
	case *file == "":
		fmt.Fprintln(e.stderr, "ticketctl apply: -f catalog.json (or -f - for stdin) is required")
		return 2
	case *token == "":
		fmt.Fprintln(e.stderr, "ticketctl apply: no admin token: set TICKETD_ADMIN_TOKEN or pass -token")
		return 2
	}
	if *base == "" {
		*base = "http://localhost:8080"
	}

	var doc []byte
	var err error
	if *file == "-" {
		doc, err = io.ReadAll(e.stdin)
	} else {
		doc, err = os.ReadFile(*file)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "ticketctl apply: read catalog: %v\n", err)
		return 1
	}

	url := strings.TrimRight(*base, "/") + "/v1/admin/catalog"
	req, err := http.NewRequest(http.MethodPut, url, bytes.NewReader(doc))
	if err != nil {
		fmt.Fprintf(e.stderr, "ticketctl apply: %v\n", err)
		return 2
	}
	req.Header.Set("Authorization", "Bearer "+*token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: applyTimeout}).Do(req)
	if err != nil {
		fmt.Fprintf(e.stderr, "ticketctl apply: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		fmt.Fprintf(e.stderr, "ticketctl apply: read response: %v\n", err)
		return 1
	}

	var reply envelope
	ok2xx := resp.StatusCode >= 200 && resp.StatusCode < 300
	if json.Unmarshal(body, &reply) != nil || reply.Success != ok2xx || (!reply.Success && reply.Code == "") {
		// Not ticketd answering (a proxy, a wrong URL): show what came back.
		fmt.Fprintf(e.stderr, "ticketctl apply: %s from %s: %s\n", resp.Status, url, excerpt(body))
		return 1
	}
	if !reply.Success {
		fmt.Fprintf(e.stderr, "ticketctl apply: %s (HTTP %d): %s\n", reply.Code, resp.StatusCode, reply.Message)
		return 1
	}
	a := reply.Data.Applied
	if a == nil {
		fmt.Fprintf(e.stderr, "ticketctl apply: success without applied counts: %s\n", excerpt(body))
		return 1
	}
	fmt.Fprintf(e.stdout, "applied: %d tenants, %d channels, %d events\n", a.Tenants, a.Channels, a.Events)
	return 0
}

// excerpt is the start of a response body, on one line.
func excerpt(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		s = "(empty body)"
	}
	return s
}
