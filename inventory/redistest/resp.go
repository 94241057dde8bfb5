package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// do sends one command to the redis-server (or Sentinel) at addr on a
// connection of its own and returns the reply: a string (simple or bulk),
// an int64, nil, or a []any of those; an error reply is returned as the
// error. It gives up after a second, or at ctx's end if sooner: a paused
// server answers nothing. The helpers below ask a node its state with it,
// without a client that would reconnect, retry or follow a failover.
func do(ctx context.Context, addr string, args ...string) (any, error) {
	d := net.Dialer{Timeout: 200 * time.Millisecond}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	deadline := time.Now().Add(time.Second)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = c.SetDeadline(deadline)
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		return nil, err
	}
	return readReply(bufio.NewReader(c))
}

// replyError is an error reply of Redis ("LOADING ...", "ERR ...").
type replyError string

func (e replyError) Error() string { return string(e) }

// readReply reads one RESP2 reply.
func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, errors.New("redistest: empty reply line")
	}
	switch line[0] {
	case '+':
		return line[1:], nil
	case '-':
		return nil, replyError(line[1:])
	case ':':
		return strconv.ParseInt(line[1:], 10, 64)
	case '$', '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return nil, err // nil bulk or nil array: no value
		}
		if line[0] == '$' {
			buf := make([]byte, n+2)
			if _, err := io.ReadFull(r, buf); err != nil {
				return nil, err
			}
			return string(buf[:n]), nil
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = readReply(r); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("redistest: unexpected reply %q", line)
}

// doString is do for a command whose reply is one string (INFO, CLUSTER
// NODES, PING).
func doString(addr string, args ...string) (string, error) {
	v, err := do(context.Background(), addr, args...)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("redistest: %s answered %v to %s, not a string", addr, v, args[0])
	}
	return s, nil
}

// info returns the fields of an INFO section (or of CLUSTER INFO, which
// has the same "name:value" lines) of the node at addr.
func info(addr string, args ...string) (map[string]string, error) {
	s, err := doString(addr, args...)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for line := range strings.SplitSeq(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out, nil
}

// role returns the first word of ROLE ("master", "slave", "sentinel"), or
// "" when the node does not answer.
func role(addr string) string {
	v, err := do(context.Background(), addr, "ROLE")
	if a, ok := v.([]any); err == nil && ok && len(a) > 0 {
		s, _ := a[0].(string)
		return s
	}
	return ""
}

// pairs reads a flat array of names and values (what Sentinel answers in
// RESP2 for a map) into a map.
func pairs(v any) map[string]string {
	a, _ := v.([]any)
	out := map[string]string{}
	for i := 0; i+1 < len(a); i += 2 {
		k, _ := a[i].(string)
		val, _ := a[i+1].(string)
		out[k] = val
	}
	return out
}

// waitUntil calls check every 50 ms until it returns "" and fails t after
// timeout with what was awaited and check's last answer (what was not so
// yet). It returns how long it waited.
func waitUntil(t testing.TB, timeout time.Duration, what string, check func() string) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		notYet := check()
		if notYet == "" {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("redistest: %s: not after %s: %s", what, timeout, notYet)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
