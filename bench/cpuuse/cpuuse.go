// Package cpuuse measures how much CPU the processes of a bench run spend
// over its timed part (from /proc, so Linux only): the service, Redis,
// Postgres and the load generator share one machine, and their sum per
// unit of work is what caps throughput there.
package cpuuse

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ticksPerSecond is USER_HZ, the unit of the times in /proc/<pid>/stat
// and /proc/stat: fixed at 100 by the kernel's user interface on every
// architecture Go supports on Linux.
const ticksPerSecond = 100

// Machine is the name of the share that sums every CPU's busy time.
const Machine = "machine (all processes)"

// Interrupts is the name of the share of interrupt and softirq time (the
// kernel's network and disk work that no process is charged with).
const Interrupts = "kernel interrupts (irq, softirq: network, disk)"

// Source is one process, or a set of processes counted together.
type Source struct {
	Name string
	pids func() []int
	// children adds what the process's children spent once they ended
	// (a Redis fork that rewrote the AOF).
	children bool
}

// Process is one process by pid.
func Process(name string, pid int) Source {
	return Source{Name: name, pids: func() []int { return []int{pid} }}
}

// ProcessAndChildren is one process by pid with its children that ended
// (and were waited for) within the window: Redis and its AOF rewrites.
func ProcessAndChildren(name string, pid int) Source {
	s := Process(name, pid)
	s.children = true
	return s
}

// Self is the calling process (the load generator).
func Self(name string) Source { return Process(name, os.Getpid()) }

// Command is every process whose command name (/proc/<pid>/comm) is comm,
// found anew at each reading: Postgres runs a process per connection.
func Command(name, comm string) Source {
	return Source{Name: name, pids: func() []int { return pidsOf(comm) }}
}

// Share is what one source spent over a window, in cores: 1 is one CPU
// busy for the whole window.
type Share struct {
	Process string  `json:"process"`
	Cores   float64 `json:"cores"`
}

// Meter reads its sources at Begin and End. A process that starts within
// the window counts from zero; one that exits within it is lost. Safe for
// use by one run at a time.
type Meter struct {
	sources []Source

	mu      sync.Mutex
	t0      time.Time
	begin   []map[int]int64
	busy0   int64
	total0  int64
	irq0    int64
	shares  []Share
	running bool
}

// New returns a meter of the sources. It measures nothing off Linux.
func New(sources ...Source) *Meter { return &Meter{sources: sources} }

// Supported reports whether this system has the /proc the meter reads.
func Supported() bool {
	_, err := os.Stat("/proc/self/stat")
	return runtime.GOOS == "linux" && err == nil
}

// Begin starts a window.
func (m *Meter) Begin() {
	if m == nil || !Supported() {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.begin = make([]map[int]int64, len(m.sources))
	for i, s := range m.sources {
		m.begin[i] = ticks(s.pids(), s.children)
	}
	m.busy0, m.total0, m.irq0, _, _ = machineTicks()
	m.t0 = time.Now()
	m.shares, m.running = nil, true
}

// End closes the window begun last and keeps its shares.
func (m *Meter) End() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.running {
		return
	}
	m.running = false
	secs := time.Since(m.t0).Seconds()
	if secs <= 0 {
		return
	}
	m.shares = make([]Share, 0, len(m.sources)+1)
	for i, s := range m.sources {
		var spent int64
		for pid, t := range ticks(s.pids(), s.children) {
			spent += t - m.begin[i][pid]
		}
		m.shares = append(m.shares, Share{Process: s.Name, Cores: float64(spent) / ticksPerSecond / secs})
	}
	if busy, total, irq, cpus, err := machineTicks(); err == nil && total > m.total0 {
		cores := func(ticks int64) float64 { return float64(cpus) * float64(ticks) / float64(total-m.total0) }
		m.shares = append(m.shares, Share{Process: Interrupts, Cores: cores(irq - m.irq0)},
			Share{Process: Machine, Cores: cores(busy - m.busy0)})
	}
}

// Shares returns the last window's shares, nil when none was measured.
func (m *Meter) Shares() []Share {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Share(nil), m.shares...)
}

// ticks reads user+system ticks of each pid still running, with those
// of its ended children when children is set.
func ticks(pids []int, children bool) map[int]int64 {
	out := make(map[int]int64, len(pids))
	for _, pid := range pids {
		if t, err := processTicks(pid, children); err == nil {
			out[pid] = t
		}
	}
	return out
}

// processTicks reads utime+stime (and cutime+cstime) from
// /proc/<pid>/stat. The command name in parentheses may hold spaces, so
// fields are counted after its last ')'.
func processTicks(pid int, children bool) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStat(b, children)
}

func parseStat(b []byte, children bool) (int64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("cpuuse: stat %.40q: no command name", b)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime, stime, cutime and cstime are
	// fields 14 to 17.
	if len(f) < 15 {
		return 0, fmt.Errorf("cpuuse: stat %.40q: %d fields", b, len(f))
	}
	last := 12
	if children {
		last = 14
	}
	var sum int64
	for _, v := range f[11 : last+1] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cpuuse: stat: times %q", f[11:last+1])
		}
		sum += n
	}
	return sum, nil
}

// machineTicks reads /proc/stat: busy (all but idle and iowait), total,
// and irq+softirq ticks summed over every CPU (its first line), and how
// many CPUs it lists (the machine's, whatever this process's affinity).
func machineTicks() (busy, total, irq int64, cpus int, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, 0, 0, err
	}
	line, rest, _ := bytes.Cut(b, []byte{'\n'})
	for l := range bytes.Lines(rest) {
		if len(l) > 3 && bytes.HasPrefix(l, []byte("cpu")) && l[3] >= '0' && l[3] <= '9' {
			cpus++
		}
	}
	f := strings.Fields(string(line))
	if len(f) < 6 || f[0] != "cpu" || cpus == 0 {
		return 0, 0, 0, 0, fmt.Errorf("cpuuse: /proc/stat: unexpected first line %q or no cpuN lines", line)
	}
	// user nice system idle iowait irq softirq steal (guest times are
	// already inside user and nice).
	for i, v := range f[1:min(len(f), 9)] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, 0, 0, 0, fmt.Errorf("cpuuse: /proc/stat: %w", err)
		}
		total += n
		if i != 3 && i != 4 {
			busy += n
		}
		if i == 5 || i == 6 {
			irq += n
		}
	}
	return busy, total, irq, cpus, nil
}

// pidsOf lists the processes whose command name is comm.
func pidsOf(comm string) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*/comm")
	var out []int
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil || strings.TrimSpace(string(b)) != comm {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(d))); err == nil {
			out = append(out, pid)
		}
	}
	return out
}
