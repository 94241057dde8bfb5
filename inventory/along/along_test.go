package along

import (
	"errors"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/redistest"
)

// A limit the node decided alone (no commands) is settled by Early, once,
// with no answers; Split then settles nothing more.
func TestEarlySettlesANodeDecidedLimitOnce(t *testing.T) {
	refused := errors.New("refused")
	calls := 0
	a := Along{Settle: func(res []rueidis.RedisResult) error {
		calls++
		if res != nil {
			t.Errorf("a node-decided limit was given %d answers", len(res))
		}
		return refused
	}}
	if err := a.Early(); !errors.Is(err, refused) {
		t.Fatalf("Early: %v, want the refusal", err)
	}
	if rest, err := a.Split(nil); err != nil || len(rest) != 0 || calls != 1 {
		t.Fatalf("Split after Early: %v %v, settled %d times, want once", rest, err, calls)
	}
}

// With commands, Early does nothing; With tells Sent it hands them out;
// Split gives Settle the commands' answers, returns the rest, and spends
// the commands (a later With sends none: rueidis recycles a command once
// answered).
func TestSplitSettlesTheCommandsAnswersAndSpendsThem(t *testing.T) {
	rc, sp := redistest.New(t)
	cmd := rc.B().Get().Key(sp.Prefix + "k").Build()
	var got, sent int
	a := Along{Cmds: []rueidis.Completed{cmd}, Settle: func(res []rueidis.RedisResult) error { got = len(res); return nil },
		Sent: func() { sent++ }}
	if err := a.Early(); err != nil || got != 0 || sent != 0 {
		t.Fatalf("Early with commands: %v, settled with %d answers, sent %d times", err, got, sent)
	}
	other := rc.B().Get().Key(sp.Prefix + "other").Build()
	if all := a.With(other); len(all) != 2 || sent != 1 {
		t.Fatalf("With: %d commands (sent told %d times), want the along's then the call's, told once", len(all), sent)
	}
	rest, err := a.Split(make([]rueidis.RedisResult, 2))
	if err != nil || got != 1 || len(rest) != 1 {
		t.Fatalf("Split: %d left, %v, settled with %d answers; want 1 left and 1 settled", len(rest), err, got)
	}
	if all := a.With(other); len(all) != 1 {
		t.Fatalf("With after Split: %d commands, want the call's alone", len(all))
	}
}
