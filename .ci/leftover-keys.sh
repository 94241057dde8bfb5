#!/usr/bin/env bash
# The check that a test run leaves no key in the shared Redis (REDIS_URL,
# default the local one) that a test wrote.
#
#   bash .ci/leftover-keys.sh snapshot FILE   the key names now, into FILE
#   bash .ci/leftover-keys.sh check FILE RUN  fail naming every key the run left
#
# Every key a test writes to the shared Redis belongs in a redistest key
# space, test:<RUN>:<random>: (TICKETD_TEST_RUN=<RUN>, which make test
# sets), which redistest deletes when its test ends. The check fails on:
#   - any key still under test:<RUN>: (a test of this run did not clean up);
#   - any key that appeared during the run outside every test space (not in
#     the snapshot, not under test:): a test wrote outside its space, as
#     TestSeatRuleLibrary once left {seatrule-test}:* without prefix or TTL.
# Keys under test: of other runs (another make test beside this one, a
# developer's go test) are theirs and never flagged, nor is any key that
# was there before the run. A process other than the tests that writes to
# the same Redis meanwhile (a ticketd, the bench) fails the second check:
# run make test against a Redis of its own then (REDIS_URL).
set -euo pipefail

url=${REDIS_URL:-redis://127.0.0.1:6379}
cli() { redis-cli -u "$url" --no-auth-warning "$@"; }

case "${1:-}" in
snapshot)
	[ $# -eq 2 ] || { echo "usage: $0 snapshot FILE" >&2; exit 2; }
	cli --scan | LC_ALL=C sort -u >"$2"
	echo "leftover-keys: $(wc -l <"$2") keys in the shared Redis before the run"
	;;
check)
	[ $# -eq 3 ] || { echo "usage: $0 check FILE RUN" >&2; exit 2; }
	before=$2 run=$3
	case "$run" in *[!A-Za-z0-9_-]* | "") echo "leftover-keys: bad run name '$run'" >&2; exit 2 ;; esac
	[ -r "$before" ] || { echo "leftover-keys: no snapshot at $before" >&2; exit 2; }
	now=$(mktemp)
	trap 'rm -f "$now"' EXIT
	cli --scan | LC_ALL=C sort -u >"$now"
	status=0
	ours=$(grep -c "^test:$run:" "$now" || true)
	if [ "$ours" -gt 0 ]; then
		echo "leftover-keys: FAIL: $ours keys of this run (test:$run:) are still in the shared Redis; the tests that wrote them did not clean up. The first:"
		grep "^test:$run:" "$now" | sed -n 1,20p | sed 's/^/  /'
		status=1
	fi
	outside=$(LC_ALL=C comm -13 "$before" "$now" | grep -v '^test:' || true)
	if [ -n "$outside" ]; then
		echo "leftover-keys: FAIL: $(wc -l <<<"$outside") keys appeared during the run outside every test space (test:): a test wrote outside its redistest space (or another process wrote to this Redis meanwhile). The first:"
		head -n 20 <<<"$outside" | sed 's/^/  /'
		status=1
	fi
	if [ $status -eq 0 ]; then
		echo "leftover-keys: no key of this run (test:$run:) and no new key outside the test spaces is left in the shared Redis"
	fi
	exit $status
	;;
*)
	echo "usage: $0 snapshot FILE | check FILE RUN" >&2
	exit 2
	;;
esac
