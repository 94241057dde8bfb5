package mailer

import (
	"fmt"
	"log/slog"
	"net/mail"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	// Helo (TICKETD_SMTP_HELO) is the name the mailer gives in EHLO: a
	// fully qualified domain name; default the host of the app URL (an IP
	// address as an address literal).
	Helo string
	// PerHour (TICKETD_MAIL_PER_HOUR) is how many messages one buyer
	// address gets in an hour; default DefaultPerHour.
	PerHour int
	// TestMode marks every message TEST MODE (payments are simulated:
	// development, or TICKETD_TEST_PAYMENTS=on); set by ticketd, not read
	// from the environment here.
	TestMode bool
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
	c.PerHour = DefaultPerHour
	if v := getenv("TICKETD_MAIL_PER_HOUR"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			return c, fmt.Errorf("TICKETD_MAIL_PER_HOUR=%q: want a whole number from 1 to 10000", v)
		}
		c.PerHour = n
	}
	c.Helo = getenv("TICKETD_SMTP_HELO")
	if c.Helo == "" {
		c.Helo = heloName(appURL)
	} else if !validHelo(c.Helo) {
		return c, fmt.Errorf("TICKETD_SMTP_HELO=%q: want a domain name such as mail.example.com or an address literal such as [192.0.2.1]", c.Helo)
	}
	return c, nil
}

// heloName is the EHLO name of the app URL's host: the name itself, an IP
// address as an address literal, "" (localhost) when there is none.
func heloName(appURL string) string {
	u, err := url.Parse(appURL)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Is6() {
			return "[IPv6:" + ip.String() + "]"
		}
		return "[" + ip.String() + "]"
	}
	if !validHelo(host) {
		return ""
	}
	return host
}

// validHelo accepts a domain name or an address literal: nothing that
// could break the EHLO line.
func validHelo(s string) bool {
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		_, err := netip.ParseAddr(strings.TrimPrefix(s[1:len(s)-1], "IPv6:"))
		return err == nil
	}
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return false
			}
		}
	}
	return true
}

// Sender returns where the configuration sends mail: SMTP, or the folder
// (each file logged to logger).
func (c Config) Sender(logger *slog.Logger) (Sender, error) {
	if c.SMTPURL != "" {
		s, err := NewSMTP(c.SMTPURL)
		if err != nil {
			return nil, err
		}
		s.Helo = c.Helo
		return s, nil
	}
	return &Dir{Path: c.Dir, Logger: logger}, nil
}
