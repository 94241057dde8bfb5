package mailer

import (
	"fmt"
	"log/slog"
	"net/mail"
	"net/url"
	"os"
	"path/filepath"
)

// Config is the mailer's environment.
type Config struct {
	// Off (TICKETD_MAIL=off) runs no mailer: outbox rows are still
	// written, nothing is sent (bench runs of hundreds of thousands of
	// orders).
	Off bool
	// SMTPURL (TICKETD_SMTP_URL) is smtp://[user:pass@]host:port (STARTTLS
	// when the server offers it) or smtps://... (TLS from the start). ""
	// writes mail into Dir instead.
	SMTPURL string
	// Dir (TICKETD_MAIL_DIR) is the folder of .eml files without SMTP;
	// default <temp dir>/ticketd-mail.
	Dir string
	// From (TICKETD_MAIL_FROM) is the sender; default tickets@ the host of
	// the app URL.
	From string
}

// ConfigFromEnv reads the mailer's variables through getenv (os.Getenv);
// appURL (TICKETD_APP_URL) gives the default sender's domain.
func ConfigFromEnv(getenv func(string) string, appURL string) (Config, error) {
	var c Config
	switch v := getenv("TICKETD_MAIL"); v {
	case "", "on":
	case "off":
		c.Off = true
	default:
		return c, fmt.Errorf("TICKETD_MAIL=%q: want on or off", v)
	}
	c.SMTPURL = getenv("TICKETD_SMTP_URL")
	if c.SMTPURL != "" {
		if _, err := parseSMTPURL(c.SMTPURL); err != nil {
			return c, err
		}
	}
	c.Dir = getenv("TICKETD_MAIL_DIR")
	if c.Dir == "" {
		c.Dir = filepath.Join(os.TempDir(), "ticketd-mail")
	}
	c.From = getenv("TICKETD_MAIL_FROM")
	if c.From == "" {
		host := "localhost"
		if u, err := url.Parse(appURL); err == nil && u.Hostname() != "" {
			host = u.Hostname()
		}
		c.From = "ticketd <tickets@" + host + ">"
	}
	if _, err := mail.ParseAddress(c.From); err != nil {
		return c, fmt.Errorf("TICKETD_MAIL_FROM=%q: not an address: %w", c.From, err)
	}
	return c, nil
}

// Sender returns where the configuration sends mail: SMTP, or the folder
// (each file logged to logger).
func (c Config) Sender(logger *slog.Logger) (Sender, error) {
	if c.SMTPURL != "" {
		return NewSMTP(c.SMTPURL)
	}
	return &Dir{Path: c.Dir, Logger: logger}, nil
}
