package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"time"

	json "github.com/goccy/go-json"
)

// adminCall is one request to ticketd's admin surface (apply, queue).
type adminCall struct {
	cmd     string // the ticketctl command, for messages
	method  string
	url     string
	base    string // ticketd's base URL, for messages
	token   string
	body    []byte // sent as JSON when not nil
	timeout time.Duration
	// explain, when set, says what a failure code the command knows
	// means ("" for the general message).
	explain func(code string) string
}

// adminDo sends c with the bearer token and returns the answer's data;
// false when it printed why it could not ("ticketctl <cmd>: ...").
func adminDo(e env, c adminCall) (json.RawMessage, bool) {
	var body io.Reader
	if c.body != nil {
		body = bytes.NewReader(c.body)
	}
	req, err := http.NewRequest(c.method, c.url, body)
	if err != nil {
		fmt.Fprintf(e.stderr, "ticketctl %s: %v\n", c.cmd, err)
		return nil, false
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if c.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: c.timeout}).Do(req)
	if err != nil {
		fmt.Fprintf(e.stderr, "ticketctl %s: %v\n", c.cmd, err)
		return nil, false
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		fmt.Fprintf(e.stderr, "ticketctl %s: read response: %v\n", c.cmd, err)
		return nil, false
	}
	var reply struct {
		Success bool            `json:"success"`
		Code    string          `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	ok2xx := resp.StatusCode >= 200 && resp.StatusCode < 300
	if json.Unmarshal(raw, &reply) != nil || reply.Success != ok2xx || (!reply.Success && reply.Code == "") {
		// Not ticketd answering (a proxy, a wrong URL): show what came back.
		fmt.Fprintf(e.stderr, "ticketctl %s: %s from %s: %s\n", c.cmd, resp.Status, c.url, excerpt(raw))
		return nil, false
	}
	if reply.Success {
		return reply.Data, true
	}
	msg := ""
	if c.explain != nil {
		msg = c.explain(reply.Code)
	}
	if msg == "" {
		msg = fmt.Sprintf("%s (HTTP %d): %s", reply.Code, resp.StatusCode, reply.Message)
		if hint := adminHint(reply.Code, c.base); hint != "" {
			msg += "; " + hint
		}
	}
	fmt.Fprintf(e.stderr, "ticketctl %s: %s\n", c.cmd, msg)
	return nil, false
}

// adminHint says what to do about failures every admin call can get, the
// server's message aside; "" for the others. ADMIN_DISABLED's message
// says it already.
func adminHint(code, base string) string {
	switch code {
	case "NOT_FOUND":
		// The router's 404: a ticketd older than ADMIN_DISABLED with its
		// admin surface off, one older than this call, or no ticketd.
		return base + " has no such admin endpoint: its admin surface is off (start ticketd with TICKETD_ADMIN_TOKEN), " +
			"it is older than this ticketctl, or TICKETD_URL (-url) is not a ticketd"
	case "ADMIN_UNAUTHORIZED":
		return "give ticketctl the TICKETD_ADMIN_TOKEN that the ticketd at " + base + " was started with (TICKETD_ADMIN_TOKEN, or -token)"
	}
	return ""
}

// adminBase is the base URL from -url or TICKETD_URL, else ticketd's
// default address.
func adminBase(flagged string) string {
	if flagged == "" {
		return "http://localhost:8080"
	}
	return flagged
}
