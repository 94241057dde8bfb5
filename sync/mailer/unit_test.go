package mailer_test

import (
	"context"
	"testing"
	"time"

	"github.com/ticketd/ticketd/sync/mailer"
)

func TestBackoffDoublesUpToTheCap(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]time.Duration{1: 30 * time.Second, 2: time.Minute, 3: 2 * time.Minute, 7: 32 * time.Minute, 8: time.Hour, 60: time.Hour} {
		if got := mailer.Backoff(n, 30*time.Second, time.Hour); got != want {
			t.Errorf("Backoff(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	c, err := mailer.ConfigFromEnv(env(nil), "http://localhost:8080")
	if err != nil || c.Off || c.SMTPURL != "" || c.Dir == "" || c.From != "ticketd <tickets@localhost>" || c.Helo != "localhost" {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	if c, _ := mailer.ConfigFromEnv(env(nil), "http://10.0.0.7:8080"); c.Helo != "[10.0.0.7]" {
		t.Fatalf("EHLO name of an IP app URL = %q, want an address literal", c.Helo)
	}
	c, err = mailer.ConfigFromEnv(env(map[string]string{"TICKETD_MAIL": "off"}), "")
	if err != nil || !c.Off {
		t.Fatalf("TICKETD_MAIL=off: %+v, %v", c, err)
	}
	// Mail off: no mailer, and Run of it returns at once.
	m, err := mailer.New(c, nil, nil, "", nil)
	if m != nil || err != nil || m.Run(context.Background()) != nil {
		t.Fatalf("New with mail off = %v, %v; want nil", m, err)
	}
	if c.PerHour != mailer.DefaultPerHour {
		t.Fatalf("default messages an hour to one address: %d, want %d", c.PerHour, mailer.DefaultPerHour)
	}
	if c, err := mailer.ConfigFromEnv(env(map[string]string{"TICKETD_MAIL_PER_HOUR": "20"}), ""); err != nil || c.PerHour != 20 {
		t.Fatalf("TICKETD_MAIL_PER_HOUR=20: %+v, %v", c, err)
	}
	for _, bad := range []map[string]string{
		{"TICKETD_MAIL_PER_HOUR": "0"}, {"TICKETD_MAIL_PER_HOUR": "five"}, {"TICKETD_MAIL_PER_HOUR": "-1"},
		{"TICKETD_MAIL": "maybe"}, {"TICKETD_SMTP_URL": "http://mail.example.com"}, {"TICKETD_MAIL_FROM": "not an address"},
		{"TICKETD_SMTP_HELO": "mx.example.com\r\nRSET"}, {"TICKETD_SMTP_HELO": "two words"},
	} {
		if _, err := mailer.ConfigFromEnv(env(bad), ""); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
