// Package logrepeat holds the log lines ticketd repeats: a slog.Handler
// that lets the first line of a message through at once and collapses its
// repeats into one summary line a second, with their count, so a fault
// that makes every request or every loop log (Redis gone, a webhook claim
// failing in each of 64 partitions) writes a few lines a second, not
// thousands.
//
// Two records are the same message when they have the same level, the
// same message text and come from the same logger (the attributes and
// groups it was built with, Logger.With). A record's own attributes (the
// error, a path) are detail: they may differ between repeats. So a logger
// built With an attribute of a small set (a route template) keeps one
// message per value apart. Options.Distinct names attribute keys whose
// value is part of the message all the same (ticketd: "payment", so that
// no payment to refund is folded into another's line).
//
// Per message: the first record passes at once. Records of the same
// message within the next second are counted, not written; at the end of
// that second one line follows: the message with repeated=N and the last
// repeat's attributes. While repeats keep coming, each further second
// writes one such line; a second without repeats ends it, and the next
// record passes at once again. A record of another message is never held
// back or dropped: the handler holds a lock only to look its message up.
//
// At most MaxMessages messages are tracked at once (a message seen once is
// forgotten a second later). When the table is full of messages that are
// repeating, a record of a new message is written as it is, never
// dropped.
package logrepeat

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Defaults of the Options' zero fields.
const (
	DefaultWindow      = time.Second
	DefaultMaxMessages = 1024
)

// Options configure New.
type Options struct {
	// Window is how long repeats are counted before their summary line;
	// 0 means DefaultWindow.
	Window time.Duration
	// MaxMessages bounds the distinct messages tracked at once; 0 means
	// DefaultMaxMessages.
	MaxMessages int
	// Distinct are attribute keys whose value belongs to the message: two
	// records of one text naming different values of such a key are two
	// messages, never collapsed into one another (ticketd: "payment", so
	// that every payment to refund is told of with its id).
	Distinct []string
}

// Handler collapses repeated records before next; see the package
// comment. Handlers derived with WithAttrs and WithGroup share one table.
type Handler struct {
	next  slog.Handler
	scope string // the attributes and groups this handler was derived with
	tab   *table
}

// New returns a Handler writing through next.
func New(next slog.Handler, opts Options) *Handler {
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.MaxMessages <= 0 {
		opts.MaxMessages = DefaultMaxMessages
	}
	return &Handler{next: next, tab: &table{window: opts.Window, max: opts.MaxMessages, distinct: opts.Distinct, msgs: map[key]*entry{}}}
}

type key struct {
	scope string
	level slog.Level
	msg   string
}

// entry is one message's window. repeats > 0 means its timer is armed and
// will write the summary.
type entry struct {
	next    slog.Handler // the scope's handler, for the summary line
	until   time.Time    // records before it are repeats
	repeats int
	last    slog.Record // the latest repeat, for its attributes
	timer   *time.Timer
	armed   uint64 // counts the timers armed: a stale one (stopped by Flush too late) does nothing
}

type table struct {
	window   time.Duration
	max      int
	distinct []string

	mu        sync.Mutex
	msgs      map[key]*entry
	lastSweep time.Time
}

// Enabled reports whether next handles level.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle writes r now, or counts it as a repeat of its message.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	t := h.tab
	now := time.Now()
	k := key{scope: h.scope, level: r.Level, msg: r.Message}
	if len(t.distinct) > 0 {
		k.scope += t.detail(r)
	}
	t.mu.Lock()
	e := t.msgs[k]
	// A record of a message whose window is open, or whose summary is
	// due (the timer may run a little after the window's end), is a repeat.
	if e != nil && (e.timer != nil || now.Before(e.until)) {
		e.repeats++
		e.last = r.Clone()
		if e.timer == nil {
			t.arm(e, e.until.Sub(now))
		}
		t.mu.Unlock()
		return nil
	}
	if e == nil {
		if len(t.msgs) >= t.max && !t.sweep(now) {
			// Full of messages that repeat now: this one is written as it
			// is rather than lost or held.
			t.mu.Unlock()
			return h.next.Handle(ctx, r)
		}
		e = &entry{next: h.next}
		t.msgs[k] = e
	}
	e.until = now.Add(t.window)
	t.mu.Unlock()
	return h.next.Handle(ctx, r)
}

// detail is the values r carries of the Distinct keys, "" when none.
func (t *table) detail(r slog.Record) string {
	var b strings.Builder
	r.Attrs(func(a slog.Attr) bool {
		for _, d := range t.distinct {
			if a.Key == d {
				b.WriteByte(2)
				b.WriteString(a.Key)
				b.WriteByte('=')
				b.WriteString(a.Value.Resolve().String())
			}
		}
		return true
	})
	return b.String()
}

// sweep forgets the messages whose window is over and that have no
// repeats to write, at most once a window; it reports whether there is
// room now. Called with mu held.
func (t *table) sweep(now time.Time) bool {
	if now.Sub(t.lastSweep) >= t.window {
		t.lastSweep = now
		for k, e := range t.msgs {
			if e.timer == nil && !now.Before(e.until) {
				delete(t.msgs, k)
			}
		}
	}
	return len(t.msgs) < t.max
}

// arm starts e's timer: summarize after d. Called with mu held.
func (t *table) arm(e *entry, d time.Duration) {
	e.armed++
	gen := e.armed
	e.timer = time.AfterFunc(d, func() { t.summarize(e, gen) })
}

// summarize runs at the end of a window with repeats: it writes their
// line and counts the next window's repeats, or, when there were none
// (the message stopped), disarms.
func (t *table) summarize(e *entry, gen uint64) {
	t.mu.Lock()
	if gen != e.armed || e.timer == nil {
		t.mu.Unlock()
		return
	}
	n, last := e.repeats, e.last
	now := time.Now()
	if n == 0 {
		e.timer, e.until = nil, now
		t.mu.Unlock()
		return
	}
	e.repeats, e.last = 0, slog.Record{}
	e.until = now.Add(t.window)
	t.arm(e, t.window)
	t.mu.Unlock()
	_ = e.next.Handle(context.Background(), summary(now, n, last))
}

// summary is the line of n repeats whose latest was last.
func summary(now time.Time, n int, last slog.Record) slog.Record {
	r := slog.NewRecord(now, last.Level, last.Message, last.PC)
	attrs := make([]slog.Attr, 0, 1+last.NumAttrs())
	attrs = append(attrs, slog.Int("repeated", n))
	last.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, a)
		return true
	})
	r.AddAttrs(attrs...)
	return r
}

// Flush writes the summary lines of every message with repeats not yet
// written (at exit: the counts would otherwise be lost).
func (h *Handler) Flush() {
	t := h.tab
	type pending struct {
		next slog.Handler
		rec  slog.Record
	}
	var out []pending
	now := time.Now()
	t.mu.Lock()
	for _, e := range t.msgs {
		if e.timer == nil {
			continue
		}
		e.timer.Stop()
		if e.repeats > 0 {
			out = append(out, pending{e.next, summary(now, e.repeats, e.last)})
		}
		e.timer, e.repeats, e.last, e.until = nil, 0, slog.Record{}, now
	}
	t.mu.Unlock()
	for _, p := range out {
		_ = p.next.Handle(context.Background(), p.rec)
	}
}

// WithAttrs returns a Handler whose records carry attrs; its messages are
// told apart from the same messages of h.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	var b strings.Builder
	b.WriteString(h.scope)
	for _, a := range attrs {
		b.WriteByte(0)
		b.WriteString(a.Key)
		b.WriteByte('=')
		b.WriteString(a.Value.Resolve().String())
	}
	return &Handler{next: h.next.WithAttrs(attrs), scope: b.String(), tab: h.tab}
}

// WithGroup returns a Handler that puts later attributes in group name.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &Handler{next: h.next.WithGroup(name), scope: h.scope + "\x01" + name, tab: h.tab}
}
