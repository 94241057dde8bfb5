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

// ErrPermanent marks a send that can never succeed (an SMTP 5xx reply:
// say, a recipient the server refuses): the row is given up at once.
var ErrPermanent = errors.New("mailer: permanent failure")

// SMTP sends over one SMTP connection per message.
type SMTP struct {
	addr        string // host:port
	host        string
	implicitTLS bool
	user, pass  string
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
		return classify("DATA", err)
	}
	// The message is accepted; a failed QUIT changes nothing.
	_ = c.Quit()
	return nil
}

// classify wraps an SMTP error, marking 5xx replies permanent.
func classify(stage string, err error) error {
	var te *textproto.Error
	if errors.As(err, &te) && te.Code >= 500 {
		return fmt.Errorf("smtp %s: %w: %w", stage, ErrPermanent, err)
	}
	return fmt.Errorf("smtp %s: %w", stage, err)
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
