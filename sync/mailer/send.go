package mailer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/smtp"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Message is one rendered e-mail.
type Message struct {
	// OrderID and Kind name the outbox row (the folder's file names).
	OrderID, Kind string
	From, To      string // bare addresses, the envelope
	Data          []byte // the RFC 5322 message, CRLF line ends
}

// Sender delivers messages.
type Sender interface {
	Send(ctx context.Context, m Message) error
}

// ErrPermanent marks a send that can never succeed (a recipient the
// server refuses for good, a row that cannot be rendered): the row is
// given up at once.
var ErrPermanent = errors.New("mailer: permanent failure")

// ErrMessage marks a failure about one message (its recipient or its
// content): the other messages of a batch are still tried. Any other
// failure of a Sender is taken as the server's or the configuration's
// (unreachable, TLS, credentials, sender refused), which would fail every
// message alike: the mailer stops the batch and waits.
var ErrMessage = errors.New("mailer: message refused")

// SMTPError is a failed step of an SMTP send. Its Error() carries the
// server's reply text, which may quote the recipient's address: it goes
// into the row's last_error, never into a log (Summary does).
type SMTPError struct {
	Stage string // "greeting", "STARTTLS", "AUTH", "MAIL FROM", "RCPT TO", "DATA", "end of DATA"
	Code  int    // the server's reply code; 0 when the failure was not a reply
	Err   error
}

func (e *SMTPError) Error() string { return "smtp " + e.Stage + ": " + e.Err.Error() }

func (e *SMTPError) Unwrap() error { return e.Err }

// Is makes a refusal of the recipient or of the finished message
// (RCPT TO, end of DATA) ErrMessage, and permanent when it is a 5xx; a
// 5xx anywhere else (a wrong password, a sender the server refuses) is the
// configuration's and retried once it is fixed. 421 is the server closing
// the connection at any stage.
func (e *SMTPError) Is(target error) bool {
	aboutMessage := (e.Stage == "RCPT TO" || e.Stage == "end of DATA") && e.Code != 0 && e.Code != 421
	switch target {
	case ErrMessage:
		return aboutMessage
	case ErrPermanent:
		return aboutMessage && e.Code >= 500
	}
	return false
}

// Summary is the failure without the reply's text: stage and code.
func (e *SMTPError) Summary() string {
	if e.Code == 0 {
		return "smtp " + e.Stage + ": no reply"
	}
	return "smtp " + e.Stage + ": " + strconv.Itoa(e.Code)
}

// SMTP sends over one SMTP connection per message.
type SMTP struct {
	addr        string // host:port
	host        string
	implicitTLS bool
	// Helo is the name this client gives in EHLO/HELO, a fully qualified
	// domain name or an address literal ("[192.0.2.1]"); "" says
	// "localhost", which many servers take for spam.
	Helo       string
	user, pass string
	// Timeout bounds one whole send (dial to QUIT); default 1 minute.
	Timeout time.Duration
	// TLS configures STARTTLS and smtps; nil verifies the server's
	// certificate against the system's roots for the URL's host.
	TLS *tls.Config
}

func parseSMTPURL(raw string) (*SMTP, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Hostname() == "" {
		return nil, errors.New("TICKETD_SMTP_URL: want smtp://[user:pass@]host:port or smtps://[user:pass@]host:port")
	}
	s := &SMTP{host: u.Hostname(), implicitTLS: u.Scheme == "smtps"}
	port := u.Port()
	if port == "" {
		port = map[bool]string{false: "25", true: "465"}[s.implicitTLS]
	}
	s.addr = net.JoinHostPort(s.host, port)
	if u.User != nil {
		s.user = u.User.Username()
		s.pass, _ = u.User.Password()
	}
	return s, nil
}

// NewSMTP returns a sender for TICKETD_SMTP_URL. Credentials are sent with
// AUTH PLAIN, which net/smtp allows only over TLS or to localhost.
func NewSMTP(rawURL string) (*SMTP, error) { return parseSMTPURL(rawURL) }

// Send delivers m: STARTTLS when the server offers it (the certificate is
// verified), AUTH when the URL has credentials.
func (s *SMTP) Send(ctx context.Context, m Message) error {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		return fmt.Errorf("smtp: dial %s: %w", s.addr, err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.TLS != nil {
		tlsConfig = s.TLS.Clone()
	}
	if tlsConfig.ServerName == "" {
		tlsConfig.ServerName = s.host
	}
	if s.implicitTLS {
		conn = tls.Client(conn, tlsConfig)
	}
	c, err := smtp.NewClient(conn, s.host)
	if err != nil {
		return classify("greeting", err)
	}
	defer c.Close()
	if s.Helo != "" {
		if err := c.Hello(s.Helo); err != nil {
			return classify("EHLO", err)
		}
	}
	if !s.implicitTLS {
		if ok, _ := c.Extension("STARTTLS"); ok {
			if err := c.StartTLS(tlsConfig); err != nil {
				return classify("STARTTLS", err)
			}
		}
	}
	if s.user != "" {
		if err := c.Auth(smtp.PlainAuth("", s.user, s.pass, s.host)); err != nil {
			return classify("AUTH", err)
		}
	}
	if err := c.Mail(m.From); err != nil {
		return classify("MAIL FROM", err)
	}
	if err := c.Rcpt(m.To); err != nil {
		return classify("RCPT TO", err)
	}
	w, err := c.Data()
	if err != nil {
		return classify("DATA", err)
	}
	if _, err := w.Write(m.Data); err != nil {
		return classify("DATA", err)
	}
	if err := w.Close(); err != nil {
		return classify("end of DATA", err)
	}
	// The message is accepted; a failed QUIT changes nothing.
	_ = c.Quit()
	return nil
}

// classify wraps an SMTP error with its stage and reply code.
func classify(stage string, err error) error {
	e := &SMTPError{Stage: stage, Err: err}
	var te *textproto.Error
	if errors.As(err, &te) {
		e.Code = te.Code
	}
	return e
}

// Dir writes each message as an .eml file into a folder (created when
// missing, readable by its owner only: the files hold buyers' data).
// Each file written is logged, with the order id and kind only.
type Dir struct {
	Path   string
	Logger *slog.Logger
}

// Send writes m to <Path>/<time>-<order id>-<kind>.eml, whole or not at all.
func (d *Dir) Send(_ context.Context, m Message) error {
	if err := os.MkdirAll(d.Path, 0o700); err != nil {
		return fmt.Errorf("mail folder: %w", err)
	}
	name := time.Now().UTC().Format("20060102T150405.000") + "-" + safeName(m.OrderID) + "-" + safeName(m.Kind) + ".eml"
	f, err := os.CreateTemp(d.Path, ".tmp-*")
	if err != nil {
		return fmt.Errorf("mail folder: %w", err)
	}
	_, werr := f.Write(m.Data)
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), filepath.Join(d.Path, name))
	}
	if werr != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("mail folder: %w", werr)
	}
	if d.Logger != nil {
		d.Logger.Info("mail written to folder", "order", m.OrderID, "kind", m.Kind, "file", filepath.Join(d.Path, name))
	}
	return nil
}

// File names take ids as they are, minus anything a file system may mind.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') {
			return r
		}
		return '_'
	}, s)
}
