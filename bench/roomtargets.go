package main

import (
	"fmt"
	"strings"

	"github.com/ticketd/ticketd/bench/report"
	"github.com/ticketd/ticketd/bench/scenario"
)

// Issue 20's targets, for its queue-sellout load (10,000 tickets, 100,000
// arrivals, 40,000 of them after T0 at 20,000/s).
const (
	issue20                = "issue 20, queue-sellout: "
	targetRoomJoins        = 12_000 // joins/s
	targetRoomJoinP99Rate  = 8_000  // joins/s at which the join p99 is judged
	targetRoomJoinP99Ms    = 50
	targetRoomPolls        = 40_000 // status polls/s
	targetRoomFirstPassS   = 0.6
	targetRoomWaveS        = 1.5
	targetRoomReturnMs     = 100
	targetRoomRho          = 0.999
	targetRoomSoldOutMs    = 250
	targetRoomRedisUs      = 400 // Redis CPU per admitted buyer
	targetRoomBytesPerWait = 400
)

// roomTargets judges issue 20's table on the queue-sellout run, when one
// ran. A rate the run did not offer (its load is a tenth of the issue's
// by default) is "not measured", never passed or failed.
func roomTargets(r *report.Run) []report.Target {
	if r == nil {
		return nil
	}
	var out []report.Target
	scale := ""
	if places, ok := figureOf(r, scenario.FigQueueWaiters); ok {
		scale = fmt.Sprintf(" (%s places for %s tickets)", thousands(places), thousands(figure(r, scenario.FigQueueTickets)))
	}
	// add judges a figure that must be at most (or, atLeast, at least)
	// bound; got formats it. A speed or cost not reached is a MISS; the
	// order of admission (fairness) is correctness: missed, a FAIL.
	add := func(name, want, fig string, bound float64, atLeast bool, got func(v float64) string) {
		rt := ratioTarget{name: name, want: want, bound: bound, atLeast: atLeast, issue: issue20}
		if fig == scenario.FigQueueSpearman {
			rt.missed = report.Fail
		}
		if v, ok := figureOf(r, fig); ok {
			out = append(out, rt.judge(v, got(v)+scale, true, ""))
		} else {
			out = append(out, rt.judge(0, "", false, "not measured: "+notedWhy(r, fig)))
		}
	}
	// offered judges a rate figure only when the run offered the load.
	offered := func(t report.Target, asked, bound float64, ok bool) {
		if asked < bound {
			t.Status = report.NotMeasured
			t.Got += fmt.Sprintf(": the run offered %s/s, less than the target (raise -rate or -arrivals to judge it)", thousands(asked))
		} else if ok {
			t.Status = report.Pass
		} else {
			t.Status = report.Miss
		}
		out = append(out, t)
	}

	joins, offer := figure(r, scenario.FigQueueJoinRate), figure(r, scenario.FigQueueJoinOffered)
	t := report.Target{Name: issue20 + "joins", Want: ">= " + thousands(targetRoomJoins) + "/s",
		Got: fmt.Sprintf("%s joins/s answered after T0 at %s/s offered", thousands(joins), thousands(offer))}
	offered(t, offer, targetRoomJoins, joins >= targetRoomJoins)

	p99 := figure(r, scenario.FigQueueJoinP99)
	t = report.Target{Name: issue20 + "join p99 at " + thousands(targetRoomJoinP99Rate) + " joins/s",
		Want: fmt.Sprintf("< %d ms", targetRoomJoinP99Ms), Got: fmt.Sprintf("join p99 %s at %s/s offered", msText(p99), thousands(offer))}
	offered(t, offer, targetRoomJoinP99Rate, p99 < targetRoomJoinP99Ms)

	peak, mean, asked := figure(r, scenario.FigQueuePollPeak), figure(r, scenario.FigQueuePollMean), figure(r, scenario.FigQueuePollAsked)
	t = report.Target{Name: issue20 + "status polls", Want: ">= " + thousands(targetRoomPolls) + "/s, from memory",
		Got: fmt.Sprintf("busiest second %s polls/s, mean %s/s (places 200 or more behind the head answered from the node's memory)",
			thousands(peak), thousands(mean))}
	offered(t, asked, targetRoomPolls, peak >= targetRoomPolls)

	add("first pass after T0", fmt.Sprintf("<= %g s", targetRoomFirstPassS), scenario.FigQueueFirstPass, targetRoomFirstPassS, false,
		func(v float64) string { return fmt.Sprintf("%.3f s (Redis' admission time of the first pass)", v) })
	add("the initial wave delivered, p99", fmt.Sprintf("<= %g s", targetRoomWaveS), scenario.FigQueueWaveP99, targetRoomWaveS, false,
		func(v float64) string {
			return fmt.Sprintf("%.2f s from T0 to a long-polling buyer's status showing its pass", v)
		})
	add("returned stock to the next pass, p99", fmt.Sprintf("<= %d ms", targetRoomReturnMs), scenario.FigQueueReturnP99, targetRoomReturnMs, false,
		func(v float64) string { return msText(v) + " from a pass's expiry to the next admission" })
	add("Spearman rho between the committed order and the actual admission order", fmt.Sprintf(">= %g", targetRoomRho),
		scenario.FigQueueSpearman, targetRoomRho, true, func(v float64) string {
			return fmt.Sprintf("%.4f against the room's audit of admissions, which orders %s pairs against the passes' admission times; "+
				"%s pairs admitted against the committed order in Redis' admission times (one millisecond's admissions tied)",
				v, thousands(figure(r, scenario.FigQueueAuditAgainstTimes)), thousands(figure(r, scenario.FigQueueDiscordant)))
		})
	add("sold-out broadcast to every waiter, p99", fmt.Sprintf("<= %d ms", targetRoomSoldOutMs), scenario.FigQueueSoldOutP99, targetRoomSoldOutMs, false,
		func(v float64) string {
			return msText(v) + " (to the long-polling half of the waiters, from the last registration's answer)"
		})
	add("Redis CPU per admitted buyer", fmt.Sprintf("<= %d us", targetRoomRedisUs), scenario.FigQueueRedisCPU, targetRoomRedisUs, false,
		func(v float64) string {
			return thousands(v) + " us (Redis' CPU over the run, every waiter's polls included, / places admitted)"
		})
	add("Redis memory per waiter", fmt.Sprintf("<= %d B (<= 40 MB for 100,000)", targetRoomBytesPerWait), scenario.FigQueueRedisPerWait,
		targetRoomBytesPerWait, false, func(v float64) string {
			return fmt.Sprintf("%s B (MEMORY USAGE of the room's keys at T0 / its places; %.1f MB for 100,000)", thousands(v), v*100_000/1e6)
		})
	return out
}

// notedWhy is the reason r's notes give for a figure not measured.
func notedWhy(r *report.Run, fig string) string {
	for _, n := range r.Notes {
		if why, ok := strings.CutPrefix(n, "not measured: "+fig+": "); ok {
			return why
		}
	}
	return "not among the run's figures"
}
