// Package along carries what a request sends ahead of an inventory call's
// first Redis round trip, and the function given its answers: the
// request's rate limit (handlers/guard.Deferred.Ride), so that a call
// whose first step is a read (a reserve, best-available, the registration
// read) costs the request one round trip, not two (design rule 7).
package along

import (
	"context"

	"github.com/redis/rueidis"
)

// Along is the commands to send ahead of a call's first round trip and
// the function given their answers. The zero value sends and settles
// nothing.
type Along struct {
	// Cmds go first in the call's first round trip.
	Cmds []rueidis.Completed
	// Settle is given the answers to Cmds, as many, before the call reads
	// its own (nil answers when there are no Cmds: a limit the node
	// decided alone); its error is the call's. It runs once.
	Settle func([]rueidis.RedisResult) error
	// Sent, when set, is told when With hands Cmds out to be sent: a call
	// that answers before its first round trip (a bad request) sends
	// nothing, and the owner then takes its limit another way.
	Sent func()
}

// Early settles a limit the node decided alone (no Cmds) before the call
// sends anything, and returns its refusal: the call then sends nothing.
// With Cmds it does nothing (Split settles them).
func (a *Along) Early() error {
	if len(a.Cmds) > 0 || a.Settle == nil {
		return nil
	}
	settle := a.Settle
	a.Settle = nil
	return settle(nil)
}

// With is Cmds ahead of cmds: the call's first round trip, sent next.
func (a *Along) With(cmds ...rueidis.Completed) []rueidis.Completed {
	n := len(a.Cmds)
	if n > 0 && a.Sent != nil {
		a.Sent()
		a.Sent = nil
	}
	return append(a.Cmds[:n:n], cmds...)
}

// Split takes res, the answers to With's commands: Settle (when not run
// yet) is given those of Cmds, and the rest are returned with its error.
// Cmds are spent then (rueidis recycles a command once answered): a later
// With sends none.
func (a *Along) Split(res []rueidis.RedisResult) ([]rueidis.RedisResult, error) {
	n := min(len(a.Cmds), len(res))
	a.Cmds = nil
	if a.Settle == nil {
		return res[n:], nil
	}
	settle := a.Settle
	a.Settle = nil
	return res[n:], settle(res[:n])
}

// Do is the first round trip of a call that only reads in it: Early, then
// Cmds and cmds in one round trip (none when both are empty), then Split.
// A refusal of Early sends nothing and returns no answers.
func (a *Along) Do(ctx context.Context, c rueidis.Client, cmds ...rueidis.Completed) ([]rueidis.RedisResult, error) {
	if err := a.Early(); err != nil {
		return nil, err
	}
	all := a.With(cmds...)
	if len(all) == 0 {
		return nil, nil
	}
	return a.Split(c.DoMulti(ctx, all...))
}
