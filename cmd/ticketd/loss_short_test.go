//go:build !reliability

package main

import "time"

// make test's versions of the loss scenarios (loss_test.go): shorter
// faults, the same checks.
const (
	lossWindow = 1500 * time.Millisecond // how much older the AOF copy is
	lossCut    = 3 * time.Second         // how long Postgres is cut
)
