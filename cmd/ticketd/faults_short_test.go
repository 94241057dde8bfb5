//go:build !reliability

package main

import "testing"

// skipUnderLongFaults skips a short fault test where its long version
// runs (make reliability): a no-op here, in make test.
func skipUnderLongFaults(*testing.T) {}
