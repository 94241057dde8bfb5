# ticketd developer tasks. `make` alone lists them; each target's `## ` line
# is its help text.

GO ?= go
# staticcheck 2026.2.2: the first release line that builds with go1.26.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.DEFAULT_GOAL := help
.PHONY: help build run services stripe-mock chromium test reliability lint bench clean

help: ## list the targets
	@awk 'BEGIN { FS = ":.*## " } /^[a-z][a-z-]*:.*## / { printf "  %-12s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

build: ## build ticketd and ticketctl into bin/
	$(GO) build -o bin/ ./cmd/...

run: build ## build and run bin/ticketd (API + sync worker) with the demo catalog
	TICKETD_ENV=development ./bin/ticketd -demo

services: ## start Redis and PostgreSQL unless they already answer (installs them if absent)
	bash .ci/services.sh

stripe-mock: ## install stripe-mock (the Stripe API double the Stripe tests start) unless it is on PATH or in GOPATH/bin
	@command -v stripe-mock >/dev/null || [ -x "$$($(GO) env GOPATH)/bin/stripe-mock" ] || $(GO) install github.com/stripe/stripe-mock@v0.203.0

chromium: ## install Chromium for the browser tests unless it is on PATH (apt-get install chromium)
	bash .ci/chromium.sh

# The contention and race tests again on a local 3-master Redis Cluster
# (.ci/cluster.sh): ticketd runs on a cluster unchanged, one slot per script.
CLUSTER_TESTS = ^(TestContentionSellsExactlyCapacity|TestIdempotentReserveUnderConcurrency|TestBestAvailableRaceNeverOverlaps|TestConcurrentCheckoutsLeaveOnlyTheNewestSessionOpen|TestRaceGA|TestRaceSeats|TestDiscountUseIsNeverExceeded|TestDiscountMaxUsesUnderConcurrency|TestContendedHoldsNeverDoubleHold|TestApplyRefusedByARacingSaleChangesNothing|TestWebhookDeliveredTwiceBooksOnce|TestConcurrentCallersShareOneLimit|TestRedeliveredOrderIsWrittenOnce|TestAdmissionNeverPassesTheStockUnderARace|TestARegistrationBurnsItsPassOnce|TestWaitingRoomOverHTTP|TestWaitingRoomRaceAndSellOutOverHTTP|TestLongPollsHearTheSellOutAndTheReturn|TestPartnersSellBesideTheRoomWithinTheirAllocation|TestFarPollsMakeNoRedisRoundTrips|TestLongPollWokenNearTheHeadTakesTheRedisLimit|TestSeatedWaitingRoomOverHTTP|TestSeatedWaitingRoomRaceOverHTTP|TestASeatedPassTokenReservesWhileItLives|TestAMultiShowingEventHasALinePerShowing|TestAShowingsLatePaymentDoesNotTakeAUnitItsLinesPassHolds)$$
CLUSTER_PKGS = ./handlers/channel ./handlers/storefront ./handlers/webhooks ./handlers/ratelimit ./inventory/registrations ./inventory/seats ./inventory/orders ./inventory/catalogstore ./sync/worker ./inventory/room

# What make test runs: every package, unless narrowed (make test TEST_PKGS=./inventory/eval/ CLUSTER_PKGS=).
TEST_PKGS = ./...

test: ## every test, race detector on, real services; the contention tests on a Redis Cluster; no key left behind: each step runs and is reported (.ci/test.sh)
	GO='$(GO)' TEST_PKGS='$(TEST_PKGS)' CLUSTER_TESTS='$(CLUSTER_TESTS)' CLUSTER_PKGS='$(CLUSTER_PKGS)' bash .ci/test.sh

reliability: services stripe-mock ## the fault, scale-out and bad-input tests (Redis Cluster, several nodes, toxiproxy, fuzzing): under 10 min, prints a summary
	bash .ci/reliability.sh

lint: ## gofmt, go vet and staticcheck (with and without the reliability tag: some files build only in one)
	@files=$$(gofmt -l .); if [ -n "$$files" ]; then echo "gofmt -l: not formatted:"; echo "$$files"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags reliability ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) run $(STATICCHECK) -tags reliability ./...

bench: services ## run the bench suite (its length and options: README, Bench; e.g. BENCH_FLAGS="-scenario flash")
	$(GO) run ./bench $(BENCH_FLAGS)

clean: ## remove build output
	rm -rf bin/
