//go:build linux && reliability

package main

import (
	"testing"
	"time"
)

// The slow-body flood of TestSecurityOneClientCannotStopTicketd held for a
// minute (make reliability). Beyond the body budget, what keeps RSS under
// 200 MB over time is the collector's pace: at GOGC=400 alone the garbage
// of the refused connections took it to 330 MB within 40 s
// (connlimit.GovernMemory).
func TestFaultSlowBodiesForAMinute(t *testing.T) {
	slowBodies(t, startLimited(t, buildTicketd(t), 16384), time.Minute)
}
