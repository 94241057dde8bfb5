package worker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/orders"
)

// mode is what a pass reads from each stream.
type mode int

const (
	modeOwn   mode = iota // entries pending with this consumer (XREADGROUP from id 0)
	modeClaim             // entries idle for ClaimIdle with any consumer (XAUTOCLAIM)
	modeNew               // entries never delivered (XREADGROUP >)
)

// entry is one stream entry. fields is nil when the entry was deleted from
// the stream while it was pending: there is nothing left to write.
type entry struct {
	stream string
	part   int
	id     string
	fields map[string]string
}

// pass runs rounds over the partitions parts (nil: every partition) until
// none has more to give. Each round sends one command per partition still
// in play, pipelined (the streams sit in different cluster slots, so one
// multi-stream command is not possible), then writes and acknowledges all
// they returned together. It returns how many entries it wrote and the
// partitions that gave any, in order.
func (w *Worker) pass(ctx context.Context, m mode, parts []int) (int, []int, error) {
	start := [...]string{modeOwn: "0", modeClaim: "0-0", modeNew: ">"}[m]
	from := make(map[int]string, keys.Partitions)
	if parts == nil {
		for p := range keys.Partitions {
			from[p] = start
		}
	}
	for _, p := range parts {
		from[p] = start
	}
	gave := map[int]bool{}
	total := 0
	var err error
	for len(from) > 0 && err == nil {
		if err = ctx.Err(); err != nil {
			break
		}
		if err = w.ensureAlive(ctx); err != nil {
			break
		}
		var n int
		n, from, err = w.round(context.WithoutCancel(ctx), m, from, gave)
		total += n
	}
	return total, slices.Sorted(maps.Keys(gave)), err
}

// round reads once from each partition in from (partition -> start id or
// claim cursor), writes and acknowledges the entries, marks in gave the
// partitions that returned any, and returns where each partition that may
// hold more should be read next.
func (w *Worker) round(ctx context.Context, m mode, from map[int]string, gave map[int]bool) (int, map[int]string, error) {
	ctx, cancel := context.WithTimeout(ctx, roundTimeout)
	defer cancel()
	parts := make([]int, 0, len(from))
	for p := range from {
		parts = append(parts, p)
	}
	sort.Ints(parts)
	cmds := make(rueidis.Commands, len(parts))
	for i, p := range parts {
		cmds[i] = w.readCmd(m, p, from[p])
	}
	seen, err := w.fenceEpoch(ctx) // before the read: a rebuild after it refuses the write
	if err != nil {
		return 0, nil, err
	}
	var all []entry
	next := map[int]string{}
	var regroup []int
	for i, r := range w.Redis.DoMulti(ctx, cmds...) {
		p := parts[i]
		es, cursor, err := w.parse(m, p, r)
		if isNoGroup(err) {
			regroup = append(regroup, p)
			continue
		}
		if err != nil {
			return 0, nil, fmt.Errorf("worker: read %s: %w", w.Space.Paid(p), err)
		}
		if len(es) > 0 {
			gave[p] = true
		}
		all = append(all, es...)
		switch {
		case m == modeClaim && cursor != "0-0":
			next[p] = cursor
		case m == modeNew && len(es) == w.batch():
			next[p] = ">"
		case m == modeOwn && len(es) == w.batch():
			next[p] = es[len(es)-1].id // history after the last one read
		}
	}
	if err := w.recreateGroups(ctx, regroup); err != nil {
		return 0, nil, err
	}
	if m == modeNew {
		for _, p := range regroup {
			next[p] = ">" // the new group starts at the stream's first entry
		}
	}
	if len(all) == 0 {
		return 0, next, nil
	}
	n, err := w.settle(ctx, all, seen)
	if err != nil {
		return n, nil, err
	}
	return n, next, nil
}

// settle writes entries this consumer holds, read under the fence's epoch
// seen, and then acknowledges them.
func (w *Worker) settle(ctx context.Context, all []entry, seen int64) (int, error) {
	if err := w.hook("read"); err != nil {
		return 0, err
	}
	// Entries of streams short of replicas stay pending (modeOwn takes
	// them again); the others are written now, so one master without its
	// replica holds back its own streams only.
	short, notHeld := w.unreplicated(ctx, all)
	if len(short) > 0 {
		kept := make([]entry, 0, len(all))
		for _, e := range all {
			if !short[e.part] {
				kept = append(kept, e)
			}
		}
		if all = kept; len(all) == 0 {
			return 0, notHeld
		}
	}
	fields := make([]map[string]string, len(all))
	for i, e := range all {
		fields[i] = e.fields
	}
	if err := orders.FillRecords(ctx, w.Redis, w.Space, fields); err != nil {
		return 0, fmt.Errorf("worker: %w", err)
	}
	n, err := w.write(ctx, all, seen)
	if err != nil {
		return 0, err
	}
	if err := w.hook("written"); err != nil {
		return 0, err
	}
	if err := w.ack(ctx, all); err != nil {
		return n, err
	}
	if err := w.hook("acked"); err != nil {
		return n, err
	}
	return n, notHeld
}

func (w *Worker) readCmd(m mode, p int, from string) rueidis.Completed {
	key := w.Space.Paid(p)
	b := w.Redis.B()
	if m == modeClaim {
		return b.Xautoclaim().Key(key).Group(w.group()).Consumer(w.consumerName()).
			MinIdleTime(strconv.FormatInt(w.claimIdle().Milliseconds(), 10)).Start(from).Count(int64(w.batch())).Build()
	}
	return b.Xreadgroup().Group(w.group(), w.consumerName()).Count(int64(w.batch())).Streams().Key(key).Id(from).Build()
}

// parse returns the entries of one reply and, for XAUTOCLAIM, the next cursor.
func (w *Worker) parse(m mode, p int, r rueidis.RedisResult) ([]entry, string, error) {
	key := w.Space.Paid(p)
	var raw []rueidis.XRangeEntry
	cursor := ""
	if m == modeClaim {
		// [next cursor, [entries], [ids deleted while pending] (Redis 7)]
		arr, err := r.ToArray()
		if err != nil {
			return nil, "", err
		}
		if len(arr) < 2 {
			return nil, "", fmt.Errorf("XAUTOCLAIM reply has %d elements", len(arr))
		}
		if cursor, err = arr[0].ToString(); err != nil {
			return nil, "", err
		}
		if raw, err = arr[1].AsXRange(); err != nil {
			return nil, "", err
		}
	} else {
		streams, err := r.AsXRead()
		if rueidis.IsRedisNil(err) {
			return nil, "", nil
		}
		if err != nil {
			return nil, "", err
		}
		raw = streams[key]
	}
	out := make([]entry, len(raw))
	for i, e := range raw {
		out[i] = entry{stream: key, part: p, id: e.ID, fields: e.FieldValues}
	}
	return out, cursor, nil
}

func isNoGroup(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && strings.HasPrefix(re.Error(), "NOGROUP")
}

// isNoKey reports XINFO's answer for a stream that does not exist.
func isNoKey(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && strings.TrimPrefix(re.Error(), "ERR ") == "no such key"
}

// recreateGroups restores the group of streams that lost it (the stream was
// deleted, or Redis restarted empty), from the stream's first entry.
func (w *Worker) recreateGroups(ctx context.Context, parts []int) error {
	if len(parts) == 0 {
		return nil
	}
	if err := w.createGroups(ctx, parts, "recreate"); err != nil {
		return err
	}
	w.logger().Warn("sync worker: consumer group was missing and has been recreated", "partitions", parts)
	return nil
}

var ackScript = eval.Load("paid_ack")

// ackChunk is the most entries one paid_ack settles: Redis runs nothing
// else while a script runs, and a catch-up's full batch of 1,024 in one
// script held every other client 8-11 ms on the 2-core bench machine; 256
// hold it about a third as long (docs/decisions.md, Sync worker).
const ackChunk = 256

// ack settles the entries once Postgres has them: a script per stream and
// ackChunk entries acknowledges them, takes them off the stream (by
// trimming below the oldest entry still to be written) and drops their
// orders' records from the order hashes (paid_ack.lua), all at once, so no
// crash leaves an entry acknowledged but on its stream, or a record gone
// while its entry waits. The scripts are pipelined.
func (w *Worker) ack(ctx context.Context, es []entry) error {
	type batch struct{ ks, args []string }
	byPart := map[int]*batch{}
	var chunks []*batch
	for _, e := range es {
		b := byPart[e.part]
		if b == nil || len(b.args)-2 == ackChunk {
			b = &batch{ks: []string{w.Space.Paid(e.part)}, args: []string{w.group(), strconv.FormatInt(w.retention().Milliseconds(), 10)}}
			byPart[e.part] = b
			chunks = append(chunks, b)
		}
		b.args = append(b.args, e.id)
		// Only an order of the stream's own partition shares its slot (the
		// scripts that pay write there); an entry naming another, which no
		// script writes, is settled without touching an order hash.
		id := e.fields[orders.StreamOrderID]
		if ev, ok := keys.OrderEvent(id); ok && keys.Partition(ev) == e.part {
			okey, _ := w.Space.Order(id)
			b.ks = append(b.ks, okey)
		}
	}
	acks := make([]eval.Pipelined, len(chunks))
	cmds := make(rueidis.Commands, len(chunks))
	for i, b := range chunks {
		acks[i] = eval.Pipeline(w.Redis, ackScript, b.ks, b.args)
		cmds[i] = acks[i].Cmd
	}
	for i, r := range w.Redis.DoMulti(ctx, cmds...) {
		if _, err := acks[i].Reply(ctx, r); err != nil {
			return fmt.Errorf("worker: acknowledge: %w", err)
		}
	}
	return nil
}
