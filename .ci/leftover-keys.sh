#!/usr/bin/env bash
# The check that a test run leaves no key in the shared Redis (REDIS_URL,
# default the local one) that a test wrote.
#
#   bash .ci/leftover-keys.sh snapshot FILE   the key names now, into FILE
#   bash .ci/leftover-keys.sh check FILE RUN  fail naming every key of run RUN left
#
# Every key a test writes to the shared Redis is in a redistest key space,
# test:<RUN>:<random>: (TICKETD_TEST_RUN=<RUN>, which make test sets), and
# redistest deletes the space when its test ends. So any key still under
# test:<RUN>: after the run is a leftover of this run, and nothing else is:
# another make test beside this one, or a ticketd or a developer using the
# same Redis, has keys of its own that this check never flags. Keys that
# appeared during the run outside every test space are listed for
# information (they may be another process's), not failed.
set -euo pipefail

url=${REDIS_URL:-redis://127.0.0.1:6379}
cli() { redis-cli -u "$url" --no-auth-warning "$@"; }

case "${1:-}" in
snapshot)
	[ $# -eq 2 ] || { echo "usage: $0 snapshot FILE" >&2; exit 2; }
	cli --scan | LC_ALL=C sort >"$2"
	echo "leftover-keys: $(wc -l <"$2") keys in the shared Redis before the run"
	;;
check)
	[ $# -eq 3 ] || { echo "usage: $0 check FILE RUN" >&2; exit 2; }
	before=$2 run=$3
	case "$run" in *[!A-Za-z0-9_-]* | "") echo "leftover-keys: bad run name '$run'" >&2; exit 2 ;; esac
	now=$(mktemp)
	trap 'rm -f "$now"' EXIT
	cli --scan | LC_ALL=C sort >"$now"
	left=$(grep -c "^test:$run:" "$now" || true)
	others=$(LC_ALL=C comm -13 "$before" "$now" | grep -v '^test:' || true)
	if [ -n "$others" ]; then
		echo "leftover-keys: $(wc -l <<<"$others") keys appeared during the run outside every test space (another process's, or a test that wrote outside its space); the first:"
		head -n 10 <<<"$others" | sed 's/^/  /'
	fi
	if [ "$left" -gt 0 ]; then
		echo "leftover-keys: FAIL: $left keys of this run (test:$run:) are still in the shared Redis; the tests that wrote them did not clean up. The first:"
		grep "^test:$run:" "$now" | head -n 20 | sed 's/^/  /'
		exit 1
	fi
	echo "leftover-keys: no key of this run (test:$run:) is left in the shared Redis"
	;;
*)
	echo "usage: $0 snapshot FILE | check FILE RUN" >&2
	exit 2
	;;
esac
