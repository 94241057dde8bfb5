// Package faultreport prints, for one fault test, what was injected, the
// load the service held while it was, and the counts that show nothing was
// lost or doubled. `make reliability` runs the fault tests with -v and
// gathers these lines into its summary, so every line starts with Marker.
package faultreport

import (
	"strings"
	"testing"
)

// Marker starts every report line; .ci/reliability.sh greps for it.
const Marker = "FAULT REPORT"

// Report is one fault test's result in words, e.g.
//
//	Injected: "Redis cut for 2s (toxiproxy reset_peer) after 300 confirms"
//	Load:     "16 buyers, 1,200 reserve+confirm pairs, 4 failed fast (503)"
//	Counts:   "sold 400 = capacity 400; Postgres rows 400 = paid 400; doubles 0"
type Report struct {
	Injected string
	Load     string
	Counts   string
}

// Print logs r under t's name. It is shown with -v (make reliability) and
// whenever the test fails.
func Print(t testing.TB, r Report) {
	t.Helper()
	t.Logf("%s %s | injected: %s | load: %s | counts: %s", Marker, t.Name(),
		oneLine(r.Injected), oneLine(r.Load), oneLine(r.Counts))
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "-"
	}
	return s
}
