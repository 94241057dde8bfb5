package main

import (
	"math"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/bench/cpuuse"
)

// TestCPUSharesShowWhatOtherWorkTook: the machine's share the listed
// processes do not explain is shown, and a run that lost a good part of
// the machine to it is flagged: on a shared machine its figures are low.
func TestCPUSharesShowWhatOtherWorkTook(t *testing.T) {
	shares := cpuShares([]cpuuse.Share{{Process: "ticketd", Cores: 0.6}, {Process: "redis", Cores: 0.4},
		{Process: cpuuse.Interrupts, Cores: 0.1}, {Process: cpuuse.Machine, Cores: 2.0}}, 1000)
	if len(shares) != 5 || shares[4].Process != otherRow || math.Abs(shares[4].Cores-0.9) > 1e-9 || math.Abs(shares[4].MicrosPerUnit-900) > 1e-6 {
		t.Fatalf("shares %+v: want the listed ones, the machine, then other work 0.90 cores (900 us per unit)", shares)
	}
	if w := busyMachine(shares, 2); !strings.Contains(w, "other work took 0.90 of the machine's 2 cores") {
		t.Fatalf("warning %q", w)
	}
	quiet := cpuShares([]cpuuse.Share{{Process: "ticketd", Cores: 1}, {Process: cpuuse.Machine, Cores: 1.1}}, 1000)
	if w := busyMachine(quiet, 2); w != "" {
		t.Fatalf("a quiet machine flagged: %q", w)
	}
	if got := cpuShares(nil, 1000); len(got) != 0 {
		t.Fatalf("nothing measured, yet %+v", got)
	}
}
