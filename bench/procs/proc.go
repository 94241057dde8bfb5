package procs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Proc is a process the bench started.
type Proc struct {
	Name string
	Log  string // the file its stdout and stderr go to
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start runs bin with args and env (added to the bench's environment),
// output to logPath. The process gets its own process group, so a Ctrl-C
// on the terminal reaches the bench alone, which then stops it in order;
// on Linux it is also killed if the bench dies.
func Start(name, bin string, args, env []string, logPath string) (*Proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("procs: %s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("procs: start %s: %w", name, err)
	}
	p := &Proc{Name: name, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// PID is the process id.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Exited is closed when the process has ended.
func (p *Proc) Exited() <-chan struct{} { return p.done }

// Stop sends SIGTERM (a graceful shutdown), waits up to timeout, then
// kills. It returns the exit error of a process that failed on its own.
func (p *Proc) Stop(timeout time.Duration) error {
	select {
	case <-p.done:
		return p.exitErr()
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("procs: %s did not stop in %s and was killed", p.Name, timeout)
	}
}

// Kill kills the process with SIGKILL (a crash: no shutdown, no final
// flush) and waits until it has ended.
func (p *Proc) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

func (p *Proc) exitErr() error {
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return fmt.Errorf("procs: %s exited: %w", p.Name, p.err)
	}
	return p.err
}

// Tail returns the last n lines of the process's log.
func (p *Proc) Tail(n int) string {
	b, err := os.ReadFile(p.Log)
	if err != nil {
		return ""
	}
	lines := strings.Split(string(bytes.TrimRight(b, "\n")), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
