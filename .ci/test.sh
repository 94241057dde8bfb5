#!/usr/bin/env bash
# make test: every step runs whatever the steps before it did, each one's
# result and time is reported at the end, and the run fails when any step
# failed. Before, a failing `go test ./...` stopped make, so the Redis
# Cluster step never ran and nothing said so.
#
# Steps: the services (Redis, PostgreSQL), stripe-mock, Chromium, a
# snapshot of the shared Redis's keys, go test of TEST_PKGS (default every
# package), the check that the tests called every operation of the OpenAPI
# document (when TEST_PKGS is every package), the contention tests on a
# 3-master Redis Cluster (CLUSTER_TESTS in CLUSTER_PKGS; none given:
# skipped), and the check that no key this run wrote is left in the shared
# Redis (.ci/leftover-keys.sh).
#
# Each step's output goes to a temporary directory, removed at the end when
# every step passed; when one failed it is kept, and the summary says where.
#
# The Makefile passes GO, TEST_PKGS, CLUSTER_TESTS and CLUSTER_PKGS.
set -uo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
TEST_PKGS=${TEST_PKGS:-./...}
CLUSTER_TESTS=${CLUSTER_TESTS:-}
CLUSTER_PKGS=${CLUSTER_PKGS:-}
# The run's name, in every key space its tests make (inventory/redistest).
export TICKETD_TEST_RUN=${TICKETD_TEST_RUN:-$(date +%Y%m%d%H%M%S)-$$}

dir=$(mktemp -d -t ticketd-test-XXXXXX)
status=0
results=()
# Interrupted: nothing to keep (the run did not finish).
trap 'rm -rf "$dir"; exit 130' INT TERM

# step NAME CMD...: run CMD, its output shown and kept; record the result.
step() {
	local name=$1
	shift
	echo
	echo "== $name"
	local out="$dir/step-${#results[@]}.log" start=$SECONDS
	if "$@" 2>&1 | tee "$out"; then
		results+=("ok    $name ($((SECONDS - start))s)")
	else
		results+=("FAIL  $name ($((SECONDS - start))s)")
		# What failed, from go test's output: the tests and packages.
		while IFS= read -r line; do
			results+=("        $line")
		done < <(grep -aE '^\s*--- FAIL|^FAIL\s|^panic: |build failed|\[setup failed\]' "$out" | head -n 40)
		status=1
	fi
}

skip() { results+=("skip  $1 ($2)"); }

step "services: Redis and PostgreSQL" bash .ci/services.sh
step "stripe-mock" make --no-print-directory stripe-mock
step "chromium" bash .ci/chromium.sh
step "snapshot of the shared Redis's keys" bash .ci/leftover-keys.sh snapshot "$dir/keys-before"
# Each test server writes the OpenAPI operations it answered under
# api-calls (handlers/servertest/openapi.go); the step after the tests
# fails when an operation of the document was called by none.
export TICKETD_API_CALLS="$dir/api-calls"
# Three packages at once on 2 cores: the tests wait on Redis, Postgres,
# Chromium and timers about half the time (the step used about one core
# with -p 2), so a third overlaps those waits: 9m56s -> 7m54s for make test.
# The timeout is a guard against a hang, not a target: cmd/ticketd, the
# longest package (about 5 minutes alone), has taken 8m33s beside the
# others on a slow day (2026-11-28), so 9m was too close.
# shellcheck disable=SC2086 # one argument per package
step "go test -race $TEST_PKGS" "$GO" test -race -count=1 -p 3 -timeout 13m $TEST_PKGS
if [ "$TEST_PKGS" = "./..." ]; then
	step "every operation of the OpenAPI document called by a test" env TICKETD_API_CALLS_CHECK="$TICKETD_API_CALLS" \
		"$GO" test -count=1 -run '^TestEveryOperationIsCalled$' ./handlers/apidoc
else
	skip "every operation of the OpenAPI document called by a test" "TEST_PKGS is not ./...: the calls of the packages left out are missing"
fi
if [ -n "$CLUSTER_TESTS" ] && [ -n "$CLUSTER_PKGS" ]; then
	# shellcheck disable=SC2086
	# (its test servers record no calls: the check above has run)
	step "contention tests on a 3-master Redis Cluster" env -u TICKETD_API_CALLS bash .ci/cluster.sh \
		"$GO" test -race -count=1 -timeout 3m -run "$CLUSTER_TESTS" $CLUSTER_PKGS
else
	skip "contention tests on a 3-master Redis Cluster" "no CLUSTER_TESTS or CLUSTER_PKGS"
fi
step "no key of this run left in the shared Redis" bash .ci/leftover-keys.sh check "$dir/keys-before" "$TICKETD_TEST_RUN"

echo
echo "== make test summary (run $TICKETD_TEST_RUN)"
printf '%s\n' "${results[@]}"
if [ $status -ne 0 ]; then
	echo "make test: FAILED (each step's output is kept in $dir)"
else
	rm -rf "$dir"
	echo "make test: every step passed"
fi
exit $status
