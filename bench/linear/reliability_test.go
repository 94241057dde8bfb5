//go:build reliability

package linear

import (
	"testing"
	"time"
)

// TestFaultLinearizable is the long run without a fault: thousands of
// concurrent partner calls against the shared Redis.
func TestFaultLinearizable(t *testing.T) {
	linearize(t, run{Workers: 8, OpsPerWorker: 600, GAEvents: 2, GATickets: 12, Cap: 40, SeatEvents: 6, Seats: 60,
		Injected: "none (concurrency only; shared Redis)"})
}

// TestFaultLinearizableRedisLatency runs the same load with the test's own
// redis-server behind a proxy that delays every chunk 1-9 ms each way, so
// the scripts of concurrent calls interleave with wide gaps between a
// call's Redis round trips, and one call in five gives up after 15 ms: its
// outcome is unknown (it may still happen on the server), and the history
// must be linearizable with it placed at any moment after its call, or
// never.
func TestFaultLinearizableRedisLatency(t *testing.T) {
	linearize(t, run{Workers: 8, OpsPerWorker: 400, GAEvents: 2, GATickets: 12, Cap: 40, SeatEvents: 6, Seats: 60,
		Base: time.Millisecond, Jitter: 8 * time.Millisecond, ShortDeadline: 15 * time.Millisecond, ShortEvery: 5,
		Injected: "Redis latency 1-9 ms each way (own redis-server behind a delaying TCP proxy); 1 call in 5 with a 15 ms client deadline (unknown outcome)"})
}
