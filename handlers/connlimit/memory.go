package connlimit

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// PerConnMemory is what one open connection may hold in the Go heap and
// its goroutine's stack (fasthttp's 8 KB read buffer, its request context,
// an 8 KB stack, and slack); measured: 10,000 idle keep-alive connections
// took 210 MB.
const PerConnMemory = 24 << 10

// minHeadroom is the least room for garbage the limit leaves above the
// live heap.
const minHeadroom = 64 << 20

// GovernMemory keeps the Go runtime's soft memory limit at base plus
// PerConnMemory for each open connection, and at least minHeadroom above
// the live heap, until the listener is closed; it then lifts the limit.
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
// headroom keeps it from collecting without end when a large catalog is
// live.
//
// The limit is the process's: call it for the one listener of a process
// (not in tests that run several ticketd in one binary), and only when
// the operator has not set GOMEMLIMIT.
func (l *Listener) GovernMemory(base int64, every time.Duration) {
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
		debug.SetMemoryLimit(max(base+l.Open()*PerConnMemory, live+minHeadroom))
		select {
		case <-t.C:
		case <-l.closed:
			return
		}
	}
}
