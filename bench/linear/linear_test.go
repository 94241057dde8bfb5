package linear

import "testing"

// TestFaultLinearizableShort is the short run of make test: a few hundred
// concurrent partner calls, no fault injected, checked by porcupine. The
// long runs, with and without Redis latency, are behind the reliability
// tag (reliability_test.go).
func TestFaultLinearizableShort(t *testing.T) {
	linearize(t, run{Workers: 6, OpsPerWorker: 100, GAEvents: 2, GATickets: 3, Cap: 18, SeatEvents: 2, Seats: 50,
		Injected: "none (the short run: concurrency only)"})
}
