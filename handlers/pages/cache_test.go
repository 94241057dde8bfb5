package pages

import (
	"testing"
	"time"
)

// A ticket page stays in the buyer's browser until the day after the
// event, so it opens at the door without signal, but never less than a
// day nor more than 400 days; an unknown start keeps it a day.
func TestTicketCacheAgeLastsPastTheEvent(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	const day = 24 * time.Hour
	for _, c := range []struct {
		start      string
		age        time.Duration
		untilAfter bool
	}{
		{"2027-01-01T18:00:00Z", 38*day + 6*time.Hour, true},
		{"2026-11-25T20:00:00+02:00", 30 * time.Hour, true}, // tonight: until tomorrow evening
		{"2026-11-20T18:00:00Z", day, true},                 // already over
		{"2029-01-01T18:00:00Z", 400 * day, false},
		{"", day, false},
		{"next Friday", day, false},
	} {
		if age, after := ticketCacheAge(c.start, now); age != c.age || after != c.untilAfter {
			t.Errorf("ticketCacheAge(%q) = %v, %v; want %v, %v", c.start, age, after, c.age, c.untilAfter)
		}
	}
}
