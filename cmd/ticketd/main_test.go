package main

import (
	"fmt"
	"os"
	"testing"
)

// TestMain gives the ticketd processes these tests run a mail folder of
// their own (the mailer writes the e-mails of every paid order there when
// no SMTP server is set), removed at the end, so no test leaves mail in
// the machine's shared temporary folder.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ticketd-test-mail-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("TICKETD_MAIL_DIR", dir)
	// The tests run ticketd in development mode (test payments, no
	// secrets key needed); the mode tests set production themselves.
	os.Setenv("TICKETD_ENV", "development")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
