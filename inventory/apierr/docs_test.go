package apierr

import (
	"os"
	"regexp"
	"strconv"
	"testing"
)

// docs/errors.md lists every code of the table with its status, and no
// other: an integrator reads it, so a code added here and not there (or
// dropped here and left there) fails.
func TestErrorsDocMatchesTheTable(t *testing.T) {
	b, err := os.ReadFile("../../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| `([A-Z][A-Z0-9_]+)` \\| (\\d{3}) \\|").FindAllStringSubmatch(string(b), -1)
	doc := map[string]int{}
	for _, r := range rows {
		if _, dup := doc[r[1]]; dup {
			t.Errorf("docs/errors.md lists %s twice", r[1])
		}
		doc[r[1]], _ = strconv.Atoi(r[2])
	}
	for code, st := range statuses {
		if got, ok := doc[code]; !ok {
			t.Errorf("docs/errors.md lacks %s (%d)", code, st)
		} else if got != st {
			t.Errorf("docs/errors.md gives %s status %d, the table %d", code, got, st)
		}
	}
	for code := range doc {
		if _, ok := statuses[code]; !ok {
			t.Errorf("docs/errors.md lists %s, which ticketd never answers", code)
		}
	}
}
