package redismem

import (
	"context"
	"strconv"
	"testing"

	"github.com/ticketd/ticketd/inventory/redistest"
)

func TestUsageAndDeletePrefix(t *testing.T) {
	rc, space := redistest.New(t)
	ctx := context.Background()
	var keys []string
	// Keys of their own, apart from the markers redistest publishes; more
	// than one pipelined chunk of them.
	prefix := space.Prefix + "k:"
	for i := range 1200 {
		k := prefix + strconv.Itoa(i)
		keys = append(keys, k)
		if err := rc.Do(ctx, rc.B().Set().Key(k).Value("0123456789").Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Scan(ctx, rc, Glob(prefix)+"*")
	if err != nil || len(got) != 1200 {
		t.Fatalf("scan found %d keys, %v", len(got), err)
	}
	sum, err := Usage(ctx, rc, append(keys, space.Prefix+"absent"))
	if err != nil {
		t.Fatal(err)
	}
	if sum < 1200*10 || sum > 1200*200 {
		t.Fatalf("MEMORY USAGE sum %d for 1200 small strings", sum)
	}
	if used, err := UsedMemory(ctx, rc); err != nil || used <= sum {
		t.Fatalf("used_memory %d, %v; want more than the keys' %d", used, err, sum)
	}
	n, err := DeletePrefix(ctx, rc, prefix)
	if err != nil || n != 1200 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	if left := redistest.Keys(t, rc, space); len(left) != 0 {
		t.Fatalf("%d keys left", len(left))
	}
	if _, err := DeletePrefix(ctx, rc, ""); err == nil {
		t.Fatal("an empty prefix was accepted")
	}
}

func TestGlobQuotesPatternCharacters(t *testing.T) {
	if got := Glob(`a*b?[c]\`); got != `a\*b\?\[c\]\\` {
		t.Fatalf("Glob = %q", got)
	}
}
