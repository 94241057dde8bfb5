package loopback_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"

	"github.com/ticketd/ticketd/inventory/loopback"
	"github.com/ticketd/ticketd/inventory/redistest"
)

// Do reads each kind of reply of a real redis-server: a simple string, an
// integer, a bulk string, nil, an array, and an error reply as an error.
func TestDoReadsEveryReplyKind(t *testing.T) {
	s := redistest.StartServer(t)
	ctx := context.Background()
	for _, c := range []struct {
		args []string
		want any
	}{
		{[]string{"SET", "k", "v"}, "OK"},
		{[]string{"INCR", "n"}, int64(1)},
		{[]string{"GET", "k"}, "v"},
		{[]string{"GET", "absent"}, nil},
	} {
		got, err := loopback.Do(ctx, s.Addr, c.args...)
		if err != nil || got != c.want {
			t.Fatalf("%v: %#v %v, want %#v", c.args, got, err, c.want)
		}
	}
	if got, err := loopback.Do(ctx, s.Addr, "MGET", "k", "absent"); err != nil || len(got.([]any)) != 2 || got.([]any)[0] != "v" || got.([]any)[1] != nil {
		t.Fatalf("MGET: %#v %v", got, err)
	}
	var re loopback.ReplyError
	if _, err := loopback.Do(ctx, s.Addr, "INCR", "k"); !errors.As(err, &re) {
		t.Fatalf("an error reply: %v", err)
	}
}

// FreeAddr hands out a loopback port below the ephemeral range, free.
func TestFreeAddrIsBelowTheEphemeralRange(t *testing.T) {
	addr, err := loopback.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(addr)
	if n, _ := strconv.Atoi(port); host != "127.0.0.1" || n < 10000 || n >= 32768 {
		t.Fatalf("FreeAddr = %s", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the address is not free: %v", err)
	}
	ln.Close()
}
