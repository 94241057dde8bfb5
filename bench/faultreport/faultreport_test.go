package faultreport

import (
	"fmt"
	"strings"
	"testing"
)

// recorder captures what Print logs.
type recorder struct {
	testing.TB
	lines []string
}

func (r *recorder) Helper()      {}
func (r *recorder) Name() string { return "TestFaultExample" }
func (r *recorder) Logf(format string, args ...any) {
	r.lines = append(r.lines, strings.TrimSpace(fmt.Sprintf(format, args...)))
}

func TestPrintWritesOneGreppableLine(t *testing.T) {
	r := &recorder{TB: t}
	Print(r, Report{Injected: "Redis cut\nfor 2s", Load: "16 buyers", Counts: ""})
	if len(r.lines) != 1 {
		t.Fatalf("lines = %q, want one", r.lines)
	}
	want := "FAULT REPORT TestFaultExample | injected: Redis cut for 2s | load: 16 buyers | counts: -"
	if r.lines[0] != want {
		t.Fatalf("line = %q, want %q", r.lines[0], want)
	}
}
