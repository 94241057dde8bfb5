package mailer

import "strings"

// Test mode marks: a buyer or a host must never take a message of a test
// deployment (development, or TICKETD_TEST_PAYMENTS=on) for a real sale.
const (
	testSubject = "[TEST MODE] "
	testText    = "TEST MODE: payments are simulated. No money was taken; these are not real tickets or orders.\n\n"
	testHTML    = `<p style="margin:0 0 16px;padding:8px 12px;border:2px solid #b54708;border-radius:8px;background:#fffaeb;color:#7a2e0e">` +
		`<strong>TEST MODE</strong>: payments are simulated. No money was taken; these are not real tickets or orders.</p>`
)

// testMode marks msg TEST MODE in its subject, first in its text and first
// in its HTML body (after the opening tags of the "head" template).
func testMode(msg message) message {
	msg.subject = testSubject + msg.subject
	msg.text = testText + msg.text
	// The "head" template opens the body with one centred <div>: the mark
	// goes first inside it.
	if i := strings.Index(msg.html, "<body"); i >= 0 {
		if j := strings.Index(msg.html[i:], "<div"); j >= 0 {
			if k := strings.IndexByte(msg.html[i+j:], '>'); k >= 0 {
				at := i + j + k + 1
				msg.html = msg.html[:at] + testHTML + msg.html[at:]
				return msg
			}
		}
	}
	msg.html = testHTML + msg.html
	return msg
}
