package integrity

import "strings"

// Room is an event's waiting room (issue 20) as its buyers saw it: what
// the sale's own checks (Sale, Registrations) do not cover.
type Room struct {
	// Label names the event in check names.
	Label string
	// Places counts the e-mails that got a place; SharedPlaces lists queue
	// ids answered to more than one e-mail.
	Places       int64
	SharedPlaces []string
	// Twice counts buyers who joined a second time with the same e-mail
	// (another device) and were answered a place; TwiceSame those
	// answered their first place. TwiceFailed counts second joins not
	// answered a place (a transport error, or 503 from an overloaded
	// node): errors of the run, not places.
	Twice, TwiceSame, TwiceFailed int64
	// Registered counts registrations made with a pass; Replays the
	// second register-guest with the same pass, ReplaysRefused those
	// answered 409 QUEUE_PASS_USED, ReplaysLapsed those answered 403
	// QUEUE_PASS_EXPIRED after the pass's expiry (refused too), and
	// ReplaysAccepted those that registered.
	Registered, Replays, ReplaysRefused, ReplaysLapsed, ReplaysAccepted int64
	// NoStock counts registrations with a live pass refused as sold out:
	// a buyer admitted with nothing left to buy.
	NoStock int64
	// Bots counts register-guest calls without a pass; BotsRefused those
	// answered 403 QUEUE_REQUIRED, BotsFailed those not answered (a
	// transport error or a 5xx: errors of the run, which shed the call or
	// lost its answer; QUEUE_REQUIRED comes before any write).
	Bots, BotsRefused, BotsFailed int64
}

// CheckRoom checks the room's rules: no pass used twice (every replay
// refused), no identity with two places, no admitted buyer without stock,
// no registration without a pass.
func CheckRoom(r Room) Checks {
	var out Checks
	name := r.Label + ": no pass used twice (every pass replayed once, every replay refused: QUEUE_PASS_USED, or QUEUE_PASS_EXPIRED once lapsed)"
	if r.Replays == 0 {
		out = append(out, Check{Name: name, Status: NotChecked, Detail: "no pass was replayed"})
	} else {
		out = append(out, check(name, r.ReplaysAccepted == 0 && r.ReplaysRefused+r.ReplaysLapsed == r.Replays && r.Replays == r.Registered,
			"registrations with a pass %d, replayed %d, refused QUEUE_PASS_USED %d, refused QUEUE_PASS_EXPIRED after the pass's expiry %d, registered again %d",
			r.Registered, r.Replays, r.ReplaysRefused, r.ReplaysLapsed, r.ReplaysAccepted))
	}
	name = r.Label + ": no identity with two places"
	shared := ""
	if len(r.SharedPlaces) > 0 {
		shared = "; shared: " + strings.Join(r.SharedPlaces[:min(len(r.SharedPlaces), 5)], ", ")
	}
	if r.Twice == 0 && r.Places == 0 {
		out = append(out, Check{Name: name, Status: NotChecked, Detail: "nobody joined"})
	} else {
		out = append(out, check(name, r.TwiceSame == r.Twice && len(r.SharedPlaces) == 0,
			"%d places; %d buyers joined twice and were answered, %d with their first place (%d more not answered: errors of the run); %d queue ids given to two e-mails%s",
			r.Places, r.Twice, r.TwiceSame, r.TwiceFailed, len(r.SharedPlaces), shared))
	}
	out = append(out, check(r.Label+": admitted-but-no-stock 0", r.NoStock == 0,
		"%d registrations with a live pass refused as sold out", r.NoStock))
	name = r.Label + ": no registration without a pass (bots answered 403 QUEUE_REQUIRED)"
	if r.Bots == 0 {
		out = append(out, Check{Name: name, Status: NotChecked, Detail: "no bot ran"})
	} else {
		out = append(out, check(name, r.BotsRefused+r.BotsFailed == r.Bots,
			"%d register-guest calls without a pass, %d refused QUEUE_REQUIRED, %d not answered (errors of the run)",
			r.Bots, r.BotsRefused, r.BotsFailed))
	}
	return out
}
