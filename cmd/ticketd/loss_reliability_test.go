//go:build reliability

package main

import "time"

// make reliability's versions of the loss scenarios (loss_test.go): the
// probe's durations.
const (
	lossWindow = 3 * time.Second // how much older the AOF copy is
	lossCut    = 7 * time.Second // how long Postgres is cut
)
