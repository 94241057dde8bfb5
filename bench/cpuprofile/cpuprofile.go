// Package cpuprofile takes ticketd's CPU profile over a bench run's timed
// windows, from the net/http/pprof ticketd serves on TICKETD_PPROF_ADDR
// (what bench/cpushare.sh's PPROF reads). That endpoint profiles for a
// whole number of seconds fixed up front, and a run's length is not known
// up front (storefront-flash ends at its arrivals): so the profile is
// taken in back-to-back one-second slices from Begin until End, and Write
// merges them with go tool pprof. Between two slices ticketd is not
// sampled for the time of one loopback request (about a millisecond a
// second); End waits for the slice under way, whose rest after the run is
// ticketd idle or finishing the run's work.
package cpuprofile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// slice is the length of one profile request.
const slice = time.Second

// Profiler profiles the Go process serving net/http/pprof at a base URL.
type Profiler struct {
	base string
	http *http.Client

	mu     sync.Mutex
	stop   chan struct{}
	done   chan struct{}
	slices [][]byte
	err    error
}

// New profiles the process whose net/http/pprof is at base
// ("http://127.0.0.1:6061").
func New(base string) *Profiler {
	return &Profiler{base: base, http: &http.Client{Timeout: slice + 30*time.Second}}
}

// Begin starts profiling, slice after slice, until End.
func (p *Profiler) Begin() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop != nil {
		return
	}
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go p.loop(p.stop, p.done)
}

// End stops profiling once the slice under way is in.
func (p *Profiler) End() {
	if p == nil {
		return
	}
	p.mu.Lock()
	stop, done := p.stop, p.done
	p.stop, p.done = nil, nil
	p.mu.Unlock()
	if stop == nil {
		return
	}
	close(stop)
	<-done
}

func (p *Profiler) loop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-stop:
			return
		default:
		}
		b, err := p.fetch()
		p.mu.Lock()
		if err != nil {
			p.err = errors.Join(p.err, err)
		} else {
			p.slices = append(p.slices, b)
		}
		p.mu.Unlock()
		if err != nil {
			return
		}
	}
}

func (p *Profiler) fetch() ([]byte, error) {
	u := p.base + "/debug/pprof/profile?seconds=" + strconv.Itoa(int(slice/time.Second))
	resp, err := p.http.Get(u)
	if err != nil {
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("cpuprofile: %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("cpuprofile: %s: %s: %s", u, resp.Status, b)
	}
	return b, nil
}

// Write merges the slices taken since the last Write into one profile at
// path (go tool pprof -proto) and returns how many it merged.
func (p *Profiler) Write(ctx context.Context, path string) (int, error) {
	p.mu.Lock()
	slices, err := p.slices, p.err
	p.slices, p.err = nil, nil
	p.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if len(slices) == 0 {
		return 0, errors.New("cpuprofile: no profile taken (the run had no timed part)")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, err
	}
	if len(slices) == 1 {
		return 1, os.WriteFile(path, slices[0], 0o644)
	}
	dir, err := os.MkdirTemp("", "ticketd-profile-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	args := []string{"tool", "pprof", "-proto"}
	for i, b := range slices {
		f := filepath.Join(dir, strconv.Itoa(i)+".pb.gz")
		if err := os.WriteFile(f, b, 0o644); err != nil {
			return 0, err
		}
		args = append(args, f)
	}
	out, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Stdout = out
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		out.Close()
		return 0, fmt.Errorf("cpuprofile: go tool pprof: %w", err)
	}
	msg, _ := io.ReadAll(stderr)
	err = cmd.Wait()
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("cpuprofile: go tool pprof -proto (merging %d slices): %w: %s", len(slices), err, msg)
	}
	return len(slices), nil
}
