package main

import (
	"bufio"
	"crypto/ed25519"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/inventory/tickets"
)

// verifyResult is verify's -json output.
type verifyResult struct {
	Valid     bool   `json:"valid"`
	TicketID  string `json:"ticketId,omitempty"`
	EventID   string `json:"eventId,omitempty"`
	Admission string `json:"admission,omitempty"`
	Error     string `json:"error,omitempty"`
	// Key is "development key" when the ticket was checked against
	// ticketd's public development key (-dev): anyone can sign such a
	// ticket, so valid means nothing at a real door.
	Key string `json:"key,omitempty"`
}

// devKeyNote is what verify says of a check against the development key.
const devKeyNote = "development key"

// development says whether ticketctl runs beside a development ticketd
// (TICKETD_ENV=development), the only place ticketd's public development
// key may be trusted; production is the default, as for ticketd.
func development(e env) bool { return e.getenv("TICKETD_ENV") == "development" }

// verifyCmd checks a ticket's QR text offline, as a door scanner does.
func verifyCmd(args []string, e env) int {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() { fmt.Fprint(e.stderr, usage) }
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pubFlag := fs.String("public-key", "", "the event's public key (base64url); default: derived from $TICKETD_SECRETS_KEY")
	dev := fs.Bool("dev", false, "check against ticketd's public development key (a ticketd -demo ticket)")
	event := fs.String("event", "", "refuse tickets of any other event")
	// Flags may come after the QR text too.
	var texts []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		texts = append(texts, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(texts) != 1 {
		fmt.Fprintln(e.stderr, "ticketctl verify: want exactly one QR text (- reads it from stdin)")
		return 2
	}
	text := texts[0]
	if text == "-" {
		line, err := bufio.NewReader(e.stdin).ReadString('\n')
		if err != nil && line == "" {
			fmt.Fprintln(e.stderr, "ticketctl verify: no QR text on stdin")
			return 2
		}
		text = line
	}
	text = strings.TrimSpace(text)

	// The development key is in ticketd's source: anyone can sign with it,
	// so it is used only when asked for, never for want of a key.
	var pub ed25519.PublicKey
	var secret string
	switch {
	case *pubFlag != "" && *dev:
		fmt.Fprintln(e.stderr, "ticketctl verify: -public-key and -dev exclude each other")
		return 2
	case *pubFlag != "":
		var err error
		if pub, err = tickets.ParsePublicKey(*pubFlag); err != nil {
			fmt.Fprintln(e.stderr, "ticketctl verify: -public-key:", err)
			return 2
		}
	case *dev && !development(e):
		fmt.Fprintln(e.stderr, "ticketctl verify: -dev checks against ticketd's public development key, which anyone can sign with: "+
			"only with TICKETD_ENV=development")
		return 2
	case *dev:
		secret = tickets.DevelopmentSecretsKey
		fmt.Fprintln(e.stderr, "ticketctl verify: checking against ticketd's public development key: anyone can sign such a ticket")
	default:
		if secret = e.getenv("TICKETD_SECRETS_KEY"); secret == "" {
			fmt.Fprintln(e.stderr, "ticketctl verify: TICKETD_SECRETS_KEY is not set: give it, or -public-key, or -dev for ticketd's development key")
			return 2
		}
		if subtle.ConstantTimeCompare([]byte(secret), []byte(tickets.DevelopmentSecretsKey)) == 1 && !development(e) {
			fmt.Fprintln(e.stderr, "ticketctl verify: TICKETD_SECRETS_KEY is ticketd's public development key, which anyone can sign with: "+
				"only with TICKETD_ENV=development")
			return 2
		}
	}
	t, err := verifyText(text, pub, secret, *event)
	note := ""
	if *dev {
		note = devKeyNote
	}
	if *asJSON {
		r := verifyResult{Valid: err == nil, TicketID: t.ID, EventID: t.EventID, Admission: t.Admission, Key: note}
		if err != nil {
			r.Error = err.Error()
		}
		b, _ := json.MarshalIndent(r, "", "  ")
		fmt.Fprintln(e.stdout, string(b))
	} else if err != nil {
		fmt.Fprintln(e.stdout, "invalid:", strings.TrimPrefix(err.Error(), "tickets: "))
	} else {
		fmt.Fprintf(e.stdout, "ticket     %s\nevent      %s\nadmission  %s\n", t.ID, t.EventID, t.Admission)
		if note != "" {
			fmt.Fprintf(e.stdout, "key        %s (public: anyone can sign such a ticket)\n", note)
		}
		fmt.Fprintln(e.stdout, "valid")
	}
	if err != nil {
		return 1
	}
	return 0
}

// verifyText checks text against pub or, without it, against the key its
// event has under the secrets key.
func verifyText(text string, pub ed25519.PublicKey, secret, event string) (tickets.Ticket, error) {
	if pub == nil {
		claimed, err := tickets.Parse(text)
		if err != nil {
			return tickets.Ticket{}, err
		}
		pub = tickets.NewKeys(secret).VerifyKey(claimed.EventID)
	}
	t, err := tickets.Verify(text, pub)
	if err != nil {
		return tickets.Ticket{}, err
	}
	if event != "" && t.EventID != event {
		return tickets.Ticket{}, fmt.Errorf("the ticket is for event %s, not %s", t.EventID, event)
	}
	return t, nil
}
