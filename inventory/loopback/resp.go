// Package loopback holds what ticketd's tests and bench use to reach the
// servers they start on loopback themselves: a free port below the
// ephemeral range (FreeAddr), and one raw Redis command on a connection of
// its own (Do), which asks a node without a client that reconnects.
package loopback

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// Do sends one command to the redis-server (or Sentinel) at addr on a
// connection of its own and returns the reply: a string (simple or bulk),
// an int64, nil, or a []any of those; an error reply is returned as the
// error. It gives up after a second, or at ctx's end if sooner: a paused
// server answers nothing. It asks a node its state without a client that
// would reconnect, retry or follow a failover (the bench's start-up waits,
// redistest's replication and failover helpers).
func Do(ctx context.Context, addr string, args ...string) (any, error) {
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

// ReplyError is an error reply of Redis ("LOADING ...", "ERR ...").
type ReplyError string

func (e ReplyError) Error() string { return string(e) }

// readReply reads one RESP2 reply.
func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, errors.New("procs: empty reply line")
	}
	switch line[0] {
	case '+':
		return line[1:], nil
	case '-':
		return nil, ReplyError(line[1:])
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
	return nil, fmt.Errorf("procs: unexpected reply %q", line)
}
