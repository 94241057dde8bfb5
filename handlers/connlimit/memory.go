package connlimit

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// PerConnMemory is what one open connection may hold of the memory Go's
// soft limit counts: fasthttp's 8 KB read and 4 KB write buffers, its
// request context, the goroutine's stack, and the heap's partly used
// spans around them. Measured: 10,000 idle keep-alive connections took
// 210 MB (21 KB each); the bench's waiting room (queue-sellout), 6,033
// connections polling and long-polling, about 200 MB (33 KB each: 8.5 KB
// of stack a goroutine in the handlers, and the requests' state). At the
// 24 KB it was, that room's limit was twice its live heap with 80 MB of
// stacks and spans inside it, so the heap had a third of the live heap
// for garbage: a collection every 40 MB allocated, a fifth of ticketd's
// CPU.
const PerConnMemory = 40 << 10

// minHeadroom is the least room for garbage the limit leaves above the
// live heap.
const minHeadroom = 64 << 20

// ceilingShare is the part of the cgroup's memory limit (per mille) the
// soft limit may reach: the rest is memory Go does not count (the
// binary's text, the kernel's socket buffers and page cache charged to
// the cgroup), so that the collector works hard before the kernel kills
// the process at the hard limit.
const ceilingShare = 900

// memoryLimit is the soft memory limit for base, open connections and a
// live heap of live bytes: base plus PerConnMemory a connection, and at
// least the live heap again above it (minHeadroom at the least); never
// above 90% of ceiling, the cgroup's memory limit (0: none known).
//
// The headroom grows with the live heap so that the collector works about
// as hard as at Go's default (GOGC=100: a collection each time the heap
// grows by the live heap, so about one byte marked for each byte
// allocated), less what the rest of what the limit counts takes of that
// room (stacks, spans, metadata: Go gives the heap what is left after
// them). While many connections are open their share is the larger term,
// and PerConnMemory is measured to cover what they hold; with few, the
// headroom is the live heap less that rest. A fixed 64 MB sat below the
// GOGC=400 goal once the live heap passed about 20 MB and multiplied the
// collections: at 100 MB live, a collection every 64 MB allocated instead
// of every 400 MB, six times as many. Under a connection flood the live
// heap is what the caps admitted, tens of MB, so the limit still holds the
// refused connections' garbage to about the live heap, not four times it.
//
// The cap: twice the live heap passes a container's limit once the live
// heap is near half of it (a 512 MB container with 260 MB live: 520 MB),
// and then the soft limit never runs the collector before the kernel's
// OOM kill. Capped, the collector runs ever harder as the heap nears the
// container's limit (Go bounds it to about half the CPU), slower but
// alive: where Go's GC guide puts GOMEMLIMIT in a container.
func memoryLimit(base, open, live, ceiling int64) int64 {
	limit := max(base+open*PerConnMemory, live+max(minHeadroom, live))
	if ceiling > 0 {
		limit = min(limit, ceiling/1000*ceilingShare)
	}
	return limit
}

// GovernMemory keeps the Go runtime's soft memory limit at base plus
// PerConnMemory for each open connection, and at least the live heap
// again above the live heap, at most 90% of the cgroup's memory limit
// (MemoryLimit) when there is one (memoryLimit), until the listener is
// closed; it then lifts the limit.
//
// Why: ticketd collects garbage at five times the live heap (GOGC=400,
// cmd/ticketd/main.go), which is cheap while the heap is a few MB. Under a
// flood of connections that the caps and the body budget refuse, the live
// heap is what they admitted, tens of MB, and the garbage of the refused
// ones grew to five times that: 5,000 connections trickling bodies for
// 40 s took 330 MB, with the bodies held to 32 MB. The limit makes the
// collector run before the garbage outgrows what the admitted connections
// hold, and sits above the heap of a sale (the bench's flash at 128
// connections collects at 50 to 85 MB), so it changes little there; the
// headroom, as large as the live heap, keeps it from collecting much more
// often than Go's default when a large catalog is live.
//
// The limit is the process's: call it for the one listener of a process
// (not in tests that run several ticketd in one binary), and only when
// the operator has not set GOMEMLIMIT.
func (l *Listener) GovernMemory(base int64, every time.Duration) {
	l.governMemory(base, int64(min(MemoryLimit(), math.MaxInt64)), every)
}

// governMemory is GovernMemory under a cgroup limit of ceiling bytes (0:
// none).
func (l *Listener) governMemory(base, ceiling int64, every time.Duration) {
	defer debug.SetMemoryLimit(math.MaxInt64)
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		metrics.Read(sample)
		var live int64
		if sample[0].Value.Kind() == metrics.KindUint64 {
			live = int64(sample[0].Value.Uint64())
		}
		debug.SetMemoryLimit(memoryLimit(base, l.Open(), live, ceiling))
		select {
		case <-t.C:
		case <-l.closed:
			return
		}
	}
}
