package mailer

import (
	"strings"
	"testing"
)

// A message of a test deployment says TEST MODE where a reader looks
// first: the subject, the text's first line, and the top of the HTML body,
// inside its page; the rest of the message is unchanged.
func TestTestModeMarksSubjectTextAndHTML(t *testing.T) {
	msg, err := hostRefund(refundData{RegistrationID: "o1.ev_x", EventName: "Summer Night", Amount: "USD 42.50", Reason: "already_paid"})
	if err != nil {
		t.Fatal(err)
	}
	got := testMode(msg)
	if got.subject != "[TEST MODE] "+msg.subject {
		t.Errorf("subject %q", got.subject)
	}
	if got.text != testText+msg.text || !strings.HasPrefix(got.text, "TEST MODE: payments are simulated.") {
		t.Errorf("text begins %q", got.text[:60])
	}
	body := got.html[strings.Index(got.html, "<body"):]
	div := strings.Index(body, "<div")
	mark := strings.Index(body, testHTML)
	if div < 0 || mark < div || strings.Contains(body[div:mark], "<p") || strings.Count(got.html, testHTML) != 1 {
		t.Errorf("the HTML mark is not the first thing in the page:\n%s", got.html)
	}
	if strings.Replace(got.html, testHTML, "", 1) != msg.html {
		t.Errorf("the HTML changed beyond the mark")
	}
}
