package cpuuse

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestMeterCountsWhatTheProcessSpent: the meter's reading of this process
// agrees with the kernel's rusage over the same window, and the machine
// was at least as busy as this process alone.
func TestMeterCountsWhatTheProcessSpent(t *testing.T) {
	if !Supported() {
		t.Skip("no /proc")
	}
	m := New(Self("self"), Process("gone", 1<<30))
	m.Begin()
	t0, w0 := cpuTime(t), time.Now()
	for x := 0; cpuTime(t)-t0 < 300*time.Millisecond; x++ {
		_ = x * x // spin on the CPU until it has spent 300 ms
	}
	spent := cpuTime(t) - t0
	m.End()
	secs := time.Since(w0).Seconds()

	sh := m.Shares()
	if len(sh) != 4 || sh[0].Process != "self" || sh[1].Process != "gone" || sh[2].Process != Interrupts || sh[3].Process != Machine {
		t.Fatalf("shares %+v: want self, gone, interrupts, machine", sh)
	}
	got := time.Duration(sh[0].Cores * secs * float64(time.Second))
	// /proc counts in 10 ms ticks and the window edges differ by a little.
	if d := got - spent; d < -50*time.Millisecond || d > 100*time.Millisecond {
		t.Errorf("meter says %v spent, rusage %v", got, spent)
	}
	if sh[1].Cores != 0 {
		t.Errorf("a process that does not exist spent %v cores", sh[1].Cores)
	}
	if sh[3].Cores < sh[0].Cores*0.8 || sh[2].Cores < 0 || sh[2].Cores > sh[3].Cores {
		t.Errorf("machine busy %.2f cores (interrupts %.2f), less than this process alone (%.2f)", sh[3].Cores, sh[2].Cores, sh[0].Cores)
	}
}

func TestCommandFindsProcessesByName(t *testing.T) {
	if !Supported() {
		t.Skip("no /proc")
	}
	b, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	if pids := Command("me", strings.TrimSpace(string(b))).pids(); !slices.Contains(pids, os.Getpid()) {
		t.Fatalf("processes named %q: %v, want %d among them", b, pids, os.Getpid())
	}
	if pids := Command("none", "no-such-command-x").pids(); len(pids) != 0 {
		t.Fatalf("no-such-command-x: %v", pids)
	}
}

func TestParseStatCountsFieldsAfterTheCommandName(t *testing.T) {
	// A command name may hold spaces and parentheses.
	line := "4242 (we (i) rd) S 1 2 3 4 5 6 7 8 9 10 250 31 400 19 20 0 1 0 99 0 0\n"
	got, err := parseStat([]byte(line), false)
	if err != nil || got != 281 {
		t.Fatalf("parseStat: %d, %v; want 250+31", got, err)
	}
	// With its ended children (a Redis AOF rewrite): 250+31+400+19.
	if got, err := parseStat([]byte(line), true); err != nil || got != 700 {
		t.Fatalf("parseStat with children: %d, %v; want 700", got, err)
	}
	if _, err := parseStat([]byte("4242 (x) S 1 2"), false); err == nil {
		t.Fatal("a short line parsed")
	}
}

func TestNilMeterIsANoOp(t *testing.T) {
	var m *Meter
	m.Begin()
	m.End()
	if m.Shares() != nil {
		t.Fatal("nil meter has shares")
	}
}

// TestProcessAndChildrenCountsEndedChildren: what a child spent and ended
// within the window (a Redis AOF rewrite) counts with its parent.
func TestProcessAndChildrenCountsEndedChildren(t *testing.T) {
	if !Supported() {
		t.Skip("no /proc")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	m := New(Process("alone", os.Getpid()), ProcessAndChildren("with children", os.Getpid()))
	m.Begin()
	start := time.Now()
	// The child spins on the CPU for a while, then ends and is waited for.
	if err := exec.Command(sh, "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done").Run(); err != nil {
		t.Fatal(err)
	}
	m.End()
	secs := time.Since(start).Seconds()
	s := m.Shares()
	if extra := (s[1].Cores - s[0].Cores) * secs; extra < 0.05 {
		t.Fatalf("shares %+v over %.2fs: the child's CPU (%.2fs) is missing", s, secs, extra)
	}
}
