package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	json "github.com/goccy/go-json"
)

// applyTimeout bounds one apply; the server itself gives up after 30s.
const applyTimeout = time.Minute

// applied is the data of a successful apply.
type applied struct {
	Applied *struct {
		Tenants  int `json:"tenants"`
		Channels int `json:"channels"`
		Events   int `json:"events"`
	} `json:"applied"`
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
	*base = adminBase(*base)

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

	data, ok := adminDo(e, adminCall{cmd: "apply", method: http.MethodPut, url: strings.TrimRight(*base, "/") + "/v1/admin/catalog",
		base: *base, token: *token, body: doc, timeout: applyTimeout})
	if !ok {
		return 1
	}
	var reply applied
	if json.Unmarshal(data, &reply) != nil || reply.Applied == nil {
		fmt.Fprintf(e.stderr, "ticketctl apply: success without applied counts: %s\n", excerpt(data))
		return 1
	}
	a := reply.Applied
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
