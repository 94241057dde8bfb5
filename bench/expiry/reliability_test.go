//go:build reliability

package expiry

import (
	"testing"
	"time"
)

// TestFaultExpiry is the long run: thousands of seat holds, registrations
// and pending partner orders made for ten seconds, each expiring a second
// later while new ones are made.
func TestFaultExpiry(t *testing.T) {
	expire(t, load{Workers: 12, For: 10 * time.Second, PaidEvery: 4})
}
