#!/usr/bin/env bash
# make reliability: the fault, scale-out and bad-input tests of issue 11, in
# under 10 minutes on the 2-core machine. Each step appends to one log; the
# summary at the end prints every fault test's FAULT REPORT line (what was
# injected, the load held, the counts) and each step's result.
set -uo pipefail
cd "$(dirname "$0")/.."

log=$(mktemp -t ticketd-reliability-XXXXXX.log)
status=0
results=()

step() { # step NAME CMD...: run CMD, record pass/fail
	local name=$1
	shift
	echo "== $name"
	local start=$SECONDS
	if "$@" 2>&1 | tee -a "$log"; then
		results+=("ok    $name ($((SECONDS - start))s)")
	else
		results+=("FAIL  $name ($((SECONDS - start))s)")
		status=1
	fi
}

# Fault tests: named TestFault*, the long ones behind the reliability tag.
# Only the packages that declare one are built (building every package's
# tests with -race would take minutes of the budget for nothing).
fault_pkgs=$(grep -rl --include='*_test.go' '^func TestFault' . | xargs -n1 dirname | sort -u)
[ -n "$fault_pkgs" ] || { echo "reliability: no TestFault tests found" >&2; exit 1; }
# shellcheck disable=SC2086 # one argument per package
step "fault tests" go test -race -count=1 -tags reliability -timeout 10m -v -run '^TestFault' $fault_pkgs

# Scale-out: the partner and storefront suites, unchanged, on a local
# 3-master Redis Cluster (.ci/cluster.sh starts it and points REDIS_URL at
# one node; tests that start their own redis-server are unaffected).
step "partner, storefront, webhook, inventory (the scripts' runner and fault cases included) and sync suites on a Redis Cluster" bash .ci/cluster.sh \
	go test -race -count=1 -timeout 8m ./handlers/channel/... ./handlers/storefront/... ./handlers/webhooks/... \
	./inventory/... ./sync/...

# Issue 11 item 1: the bench's flash scenario, unchanged, on a 3-master Redis
# Cluster the bench starts and removes (-redis-cluster 3); its integrity
# checks (sold exactly what was confirmed, no oversell, Postgres holds every
# paid order once) fail the step. Ceilings and baseline are comparisons, not
# the scenario: skipped to keep it to about half a minute.
step "bench flash on Redis Cluster" go run ./bench -scenario flash -redis-cluster 3 -duration 5s \
	-no-ceiling -no-baseline -html none

# deadline_race FILE: the run failed only with Go 1.26's fuzz coordinator
# race (go.dev/issue/75804, fixed in Go 1.27): at the end of a duration
# -fuzztime it can report its own "context deadline exceeded" as the
# target's failure. That bare line with no failing input written and no
# other failure text is not a finding.
deadline_race() {
	grep -aq '^    context deadline exceeded$' "$1" &&
		! grep -aq 'Failing input written\|panic:\|_test.go:[0-9]' "$1"
}

# Fuzz targets (issue 11 item 10): every FuzzXxx of every package, one
# `go test -fuzz` per target (go fuzzes one target a run), FUZZTIME each
# (default 5s; 23 targets, 2 to 3 minutes with the instrumented
# builds). Targets are found by their declarations, not `go test -list`,
# which would build every package's tests once more. A failing input is
# written to the package's testdata/fuzz/FuzzXxx/ by go test: commit it
# with the fix. The seed corpora also run as plain tests in make test.
fuzz_all() {
	local fuzztime=${FUZZTIME:-5s} failed=0 dir pkg t
	for dir in $(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do
		pkg=./${dir#./}
		for t in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | cut -c6- | sort -u); do
			local start=$SECONDS
			if go test -run '^$' -fuzz "^$t\$" -fuzztime "$fuzztime" -fuzzminimizetime 10s -parallel 2 "$pkg" >"$log.fuzz" 2>&1; then
				echo "ok    $pkg $t ($((SECONDS - start))s, $(grep -ao 'execs: [0-9]*' "$log.fuzz" | tail -1))"
			elif deadline_race "$log.fuzz"; then
				echo "ok    $pkg $t ($((SECONDS - start))s, $(grep -ao 'execs: [0-9]*' "$log.fuzz" | tail -1); go#75804: Go 1.26's fuzz coordinator reported its own -fuzztime deadline, no failing input)"
			else
				echo "FAIL  $pkg $t ($((SECONDS - start))s)"
				grep -av 'fuzz: elapsed' "$log.fuzz"
				failed=1
			fi
		done
	done
	rm -f "$log.fuzz"
	return $failed
}
step "fuzz targets" fuzz_all

echo
echo "== summary (whole output: $log)"
grep -h 'FAULT REPORT' "$log" | sed -E 's/^ *[a-z_0-9]+\.go:[0-9]+: //' || echo "(no fault reports)"
printf '%s\n' "${results[@]}"
exit $status
