package redistest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/inventory/loopback"
)

// doString is loopback.Do for a command whose reply is one string (INFO, CLUSTER
// NODES, PING).
func doString(addr string, args ...string) (string, error) {
	v, err := loopback.Do(context.Background(), addr, args...)
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
	v, err := loopback.Do(context.Background(), addr, "ROLE")
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

// Info returns the fields of one INFO section of s ("replication"), as
// info does.
func (s *Server) Info(section string) (map[string]string, error) {
	return info(s.Addr, "INFO", section)
}
